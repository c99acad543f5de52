using System.Globalization;
using System.Text.Json.Nodes;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The lab merges a step's overlay and a what-if's <c>-f</c>, <c>--set</c>, <c>--set-string</c> and
/// <c>--set-file</c> values as helm does: the values the lab runs with are the <c>.Values</c> helm
/// renders the chart with, for the same arguments. helm's side comes from a copy of the chart whose
/// only template prints <c>.Values</c> as JSON.
/// </summary>
public sealed class LabValuesTests : IDisposable
{
    private static readonly StepCatalog Catalog = StepCatalog.Load(Chart.Directory);

    private readonly string _directory = Directory.CreateTempSubdirectory("lab-values-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    public static TheoryData<string> Steps => Chart.Steps;

    [Theory]
    [MemberData(nameof(Steps))]
    public void A_step_s_values_are_helm_s_for_its_overlay(string step)
    {
        AssertSameValues(HelmValues("-f", Chart.StepFile(step)), Catalog[step].Values);
    }

    [Fact]
    public void A_what_if_s_values_are_helm_s_for_the_same_files_and_sets_in_helm_s_order()
    {
        var first = Write("first.yaml", """
            workflow:
              settings:
                Processor:
                  PrefetchCount: 50
                  MaxConcurrentCalls: 8
            commonSettings:
              Telemetry:
                TraceSamplingRatio: 0.5
            telemetry:
              serviceMonitor:
                labels: { team: drones, tier: backend }
            """);
        var second = Write("second.yaml", """
            workflow:
              settings:
                Processor:
                  PrefetchCount: 0
            telemetry:
              serviceMonitor:
                labels: ~
            networkPolicy:
              publicFrom:
                - ipBlock: { cidr: 10.0.0.0/8 }
            """);
        var annotation = Write("annotation.txt", "owned by the drone team\n");
        var whatIf = new WhatIf(
        [
            // On the command line before the files, applied after them (helm's order).
            new(ValuesSourceKind.Set, "workflow.settings.Processor.MaxConcurrentCalls=30,cosmosDb.containers.utilization.throughput=1200"),
            new(ValuesSourceKind.File, first),
            new(ValuesSourceKind.SetString, "image.tag=2.0.0"),
            new(ValuesSourceKind.File, second),
            new(ValuesSourceKind.Set, @"ingress.tls[0].secretName=dronedelivery-tls,ingress.annotations.example\.com/note=a\,b,telemetry.dashboards.enabled=true,seed.concurrency=16"),
            new(ValuesSourceKind.Set, "networkPolicy.publicFrom[0].ipBlock.cidr=192.168.0.0/16"),
            new(ValuesSourceKind.SetFile, $"ingress.annotations.description={annotation}"),
        ]);

        AssertSameValues(
            HelmValues(["-f", Chart.StepFile("B4"), .. whatIf.InHelmOrder.SelectMany(s => new[] { s.Flag, s.Text })]),
            Catalog.WhatIf("B4", whatIf).Values);
    }

    /// <summary>What helm's schema check refuses, the lab refuses before starting anything, naming the same value.</summary>
    [Theory]
    [InlineData("--set", "serviceDefaults.podAnnotations.flag=true", "/serviceDefaults/podAnnotations/flag")]
    [InlineData("--set", "workflow.settings.Processor.PrefetchCount=-1", "/workflow/settings/Processor/PrefetchCount")]
    [InlineData("--set", "commonSettings.Telemetry.TraceSamplingRatio=0.5", "/commonSettings/Telemetry/TraceSamplingRatio")]
    [InlineData("--set-string", "gateway.replicas=3", "/gateway/replicas")]
    [InlineData("--set", "cosmosDb.containers.utilization.throughput=1250", "/cosmosDb/containers/utilization/throughput")]
    public void Values_helm_refuses_the_lab_refuses_at_the_same_place(string flag, string assignment, string location)
    {
        var helm = ExternalTool.Run(ExternalTool.Helm, ["template", Chart.ReleaseName, Chart.Directory, "--kube-version", Chart.KubernetesVersion, "-f", Chart.StepFile("B4"), flag, assignment]);
        var lab = Assert.Throws<InvalidDataException>(() => Catalog.WhatIf("B4", new WhatIf([new(flag == "--set" ? ValuesSourceKind.Set : ValuesSourceKind.SetString, assignment)])));

        Assert.NotEqual(0, helm.ExitCode);
        Assert.Contains($"at '{location}'", helm.StandardError);
        Assert.Contains($"at '{location}'", lab.Message);
    }

    /// <summary>helm's .Values for these arguments, from a copy of the chart that renders only them.</summary>
    private JsonNode HelmValues(params string[] arguments)
    {
        var chart = Path.Combine(_directory, "chart");
        if (!Directory.Exists(chart))
        {
            Directory.CreateDirectory(Path.Combine(chart, "templates"));
            foreach (var file in new[] { "Chart.yaml", "values.yaml", "values.schema.json" })
            {
                File.Copy(Path.Combine(Chart.Directory, file), Path.Combine(chart, file));
            }

            File.WriteAllText(Path.Combine(chart, "templates", "values.yaml"), """
                apiVersion: v1
                kind: ConfigMap
                metadata:
                  name: values
                data:
                  values.json: {{ toJson .Values | quote }}
                """);
        }

        var result = ExternalTool.Run(ExternalTool.Helm, ["template", Chart.ReleaseName, chart, "--kube-version", Chart.KubernetesVersion, .. arguments]);
        Assert.True(result.ExitCode == 0, $"helm template failed: {result.Describe()}");
        var configMap = Assert.Single(Yaml.Documents(result.StandardOutput));
        return JsonNode.Parse(configMap.Text("data", "values.json")!)!;
    }

    private static decimal Number(JsonValue value) => decimal.Parse(value.ToJsonString(), NumberStyles.Float, CultureInfo.InvariantCulture);

    private string Write(string name, string text)
    {
        var path = Path.Combine(_directory, name);
        File.WriteAllText(path, text);
        return path;
    }

    private static void AssertSameValues(JsonNode helm, ValuesTree lab)
    {
        var differences = new List<string>();
        Compare(helm, lab.ToJson(), string.Empty, differences);
        Assert.True(differences.Count == 0, "The lab's values differ from helm's:\n" + string.Join('\n', differences));
    }

    /// <summary>Every path where two JSON trees differ; numbers compare by value (helm reads every YAML number as a float).</summary>
    private static void Compare(JsonNode? helm, JsonNode? lab, string path, List<string> differences)
    {
        switch (helm, lab)
        {
            case (JsonObject h, JsonObject l):
                foreach (var key in h.Select(p => p.Key).Union(l.Select(p => p.Key)))
                {
                    if (!h.ContainsKey(key) || !l.ContainsKey(key))
                    {
                        differences.Add($"{path}/{key}: {(h.ContainsKey(key) ? "only helm has it" : "only the lab has it")}");
                        continue;
                    }

                    Compare(h[key], l[key], $"{path}/{key}", differences);
                }

                break;
            case (JsonArray h, JsonArray l):
                if (h.Count != l.Count)
                {
                    differences.Add($"{path}: helm has {h.Count} items, the lab {l.Count}");
                    break;
                }

                for (var i = 0; i < h.Count; i++)
                {
                    Compare(h[i], l[i], $"{path}/{i}", differences);
                }

                break;
            case (JsonValue h, JsonValue l) when h.GetValueKind() == System.Text.Json.JsonValueKind.Number && l.GetValueKind() == System.Text.Json.JsonValueKind.Number:
                if (Number(h) != Number(l))
                {
                    differences.Add($"{path}: helm {h.ToJsonString()}, the lab {l.ToJsonString()}");
                }

                break;
            default:
                if (!JsonNode.DeepEquals(helm, lab))
                {
                    differences.Add(string.Create(CultureInfo.InvariantCulture, $"{path}: helm {helm?.ToJsonString() ?? "null"}, the lab {lab?.ToJsonString() ?? "null"}"));
                }

                break;
        }
    }
}
