using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// https to the Ingress works only where the chart renders spec.tls for its host: the values render
/// it, and the deploy guides show https ingress URLs only next to the values that do.
/// </summary>
public sealed partial class IngressTlsTests
{
    private const string Host = "dronedelivery.example.com";

    private static ValuesSet WithIngress(string name, params string[] more) =>
        new(name, ["--set", "ingress.enabled=true", "--set", $"ingress.host={Host}", .. more]);

    public static TheoryData<string> Guides() =>
        new(Directory.GetFiles(RepositoryLayout.InRepository("docs"), "deploy-*.md").Select(Path.GetFileName).Order(StringComparer.Ordinal)!);

    [Fact]
    public void Without_tls_values_the_Ingress_has_no_tls()
    {
        var ingress = Chart.Template(WithIngress("ingress without tls")).Get("Ingress", "dronedelivery");

        Assert.Empty(ingress.Body.List("spec", "tls"));
    }

    [Theory]
    [InlineData("ingress.tls[0].secretName=dronedelivery-tls")]
    [InlineData("ingress.tls[0].secretName=dronedelivery-tls,ingress.tls[0].hosts[0]=dronedelivery.example.com")]
    public void With_tls_values_the_Ingress_has_spec_tls_for_its_host(string tls)
    {
        var render = Chart.Template(WithIngress($"ingress with {tls}", "--set", tls));

        var entries = render.Get("Ingress", "dronedelivery").Body.List("spec", "tls").ToList();
        var entry = Assert.Single(entries);
        Assert.Equal([Host], entry.List("hosts").Select(h => h?.ToString()));
        Assert.Equal("dronedelivery-tls", entry.Text("secretName"));
        Assert.Equal(Host, render.Get("Ingress", "dronedelivery").Body.List("spec", "rules").Single().Text("host"));
        var result = Kubeconform.Validate(render.Text);
        Assert.True(result.ExitCode == 0, result.Describe());
    }

    [Fact]
    public void Schema_refuses_a_misspelt_tls_field()
    {
        var error = Chart.TemplateError("--set", "ingress.enabled=true", "--set", "ingress.tls[0].secret=dronedelivery-tls");

        Assert.Contains("at '/ingress/tls/0'", error);
        Assert.Contains("'secret' not allowed", error);
    }

    [Theory]
    [MemberData(nameof(Guides))]
    public void An_https_ingress_URL_in_a_guide_comes_with_the_tls_values_that_render_spec_tls(string guide)
    {
        var text = File.ReadAllText(RepositoryLayout.InRepository("docs", guide));

        var urls = HttpsIngressUrls(text);
        if (urls.Count == 0)
        {
            return; // plain http only: nothing the chart has to render
        }

        var tls = TlsSettings(text);
        Assert.True(tls.Count > 0, $"{guide} uses {string.Join(", ", urls)} but shows no --set ingress.tls... values");
        var render = Chart.Template(WithIngress($"{guide} tls", [.. tls.SelectMany(setting => new[] { "--set", setting })]));
        var hosts = render.Get("Ingress", "dronedelivery").Body.List("spec", "tls").SelectMany(entry => entry.List("hosts")).Select(h => h?.ToString());
        Assert.True(hosts.Contains(Host), $"{guide}'s {string.Join(" ", tls)} render no spec.tls for ingress.host");
    }

    [Fact]
    public void The_guide_check_finds_https_ingress_URLs_and_only_those()
    {
        const string Text = """
            helm upgrade ... --set ingress.host=<host>
            dotnet run -- invoice --target https://<ingress host> --step 1:40:8m
            curl https://<host>/api/invoices/owner-0001
            helm repo add prometheus-community https://prometheus-community.github.io/helm-charts
            dotnet run -- seed --account-endpoint https://<account>.documents.azure.com:443/
            """;

        Assert.Equal(["https://<ingress host>", "https://<host>"], HttpsIngressUrls(Text));
        Assert.Empty(TlsSettings(Text));
        Assert.Equal(["ingress.tls[0].secretName=x"], TlsSettings("helm upgrade ... --set 'ingress.tls[0].secretName=x'"));
    }

    /// <summary>https URLs whose host is the Ingress's: a placeholder naming a host, or a value the guide gives ingress.host.</summary>
    private static List<string> HttpsIngressUrls(string text)
    {
        var ingressHosts = IngressHostSetting().Matches(text).Select(m => m.Groups[1].Value).ToHashSet(StringComparer.Ordinal);
        return HttpsUrl().Matches(text)
            .Where(m => ingressHosts.Contains(m.Groups[1].Value) || HostPlaceholder().IsMatch(m.Groups[1].Value))
            .Select(m => m.Value)
            .ToList();
    }

    private static List<string> TlsSettings(string text) =>
        TlsSetting().Matches(text).Select(m => m.Groups[1].Value).ToList();

    [GeneratedRegex(@"https://(<[^>\n]*>|[^\s/`'""<>)\]]+)")]
    private static partial Regex HttpsUrl();

    [GeneratedRegex(@"^<[^>]*\bhost>$")]
    private static partial Regex HostPlaceholder();

    [GeneratedRegex(@"ingress\.host=([^\s'`\\]+)")]
    private static partial Regex IngressHostSetting();

    [GeneratedRegex(@"--set(?:-string)?[ =]'?(ingress\.tls[^\s'`]*)")]
    private static partial Regex TlsSetting();
}
