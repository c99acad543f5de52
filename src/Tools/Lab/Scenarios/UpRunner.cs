using System.CommandLine;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>
/// <c>up --step A4</c>: the system at one step's configuration on 127.0.0.1, warmed up, then left running for
/// a load of your own — Locust, the load driver, curl — until Ctrl-C. It prints the public services'
/// addresses and writes the development issuer's key, from which the load driver's <c>token</c> command
/// mints tokens the services accept.
/// </summary>
internal static class UpRunner
{
    public static Command Command(Option<string?> output, Func<string> defaultOutput, Action<string> log)
    {
        var prometheus = LabCommands.PrometheusOption();
        var dashboard = LabCommands.DashboardOption();
        var step = new Option<string>("--step") { Description = "The step whose configuration runs (e.g. A4, B5).", DefaultValueFactory = _ => "A4" };
        var calibration = LabCommands.CalibrationOption();
        var values = new WhatIfOptions("Values");
        var command = new Command("up", "Start the system at one step's configuration and keep it running for a load of your own until Ctrl-C.") { step, output, prometheus, dashboard, calibration };
        values.AddTo(command);
        command.SetAction(async (parse, cancellationToken) =>
        {
            var stepId = parse.GetValue(step)!.ToUpperInvariant();
            var scenario = LabRunner.All.FirstOrDefault(s => s.StepIds.Contains(stepId, StringComparer.Ordinal));
            if (scenario is null)
            {
                Console.Error.WriteLine("up needs a known --step (A1–A4, B1–B6).");
                return 2;
            }

            if (!LabCommands.TryCalibration(parse.GetValue(calibration), LabCalibration.DefaultProfile, out var calibrated))
            {
                return 2;
            }

            // The chart's replicas and real time (full mode), as on a cluster: a load of your own is measured against them.
            var options = new LabRunOptions
            {
                Scenarios = [scenario.Id],
                Steps = [stepId],
                Mode = LabMode.Full,
                OutputDirectory = parse.GetValue(output) ?? defaultOutput(),
                PrometheusPort = parse.GetValue(prometheus),
                Dashboard = parse.GetValue(dashboard),
                DeploymentValues = ApiReferenceValues,
                Calibration = calibrated,
                Log = log,
            };
            var catalog = StepCatalog.Load(options.ChartDirectory);
            Step chosen;
            try
            {
                chosen = values.Read(parse) is { } set ? catalog.WhatIf(stepId, set) : catalog[stepId];
            }
            catch (InvalidDataException e)
            {
                Console.Error.WriteLine(e.Message);
                return 2;
            }

            return await LabCommands.ExitCodeAsync("system", () => RunAsync(scenario, catalog, chosen, options, Console.Out, cancellationToken), cancellationToken).ConfigureAwait(false);
        });
        return command;
    }

    private static async Task<int> RunAsync(LabScenario scenario, StepCatalog catalog, Step step, LabRunOptions options, TextWriter output, CancellationToken cancellationToken)
    {
        var context = await LabRunner.StartAtStepAsync(scenario, catalog, step, options, new Dictionary<ServiceKind, int>(), warmUp: true, cancellationToken).ConfigureAwait(false);
        await using (context.Deployment.ConfigureAwait(false))
        {
            var deployment = context.Deployment;
            // Only what runs: a scenario starts the services it uses (scenario A has no Ingestion).
            var publicServices = deployment.Services.Values.Where(set => set.Service.Public && set.Replicas.Count > 0)
                .OrderBy(set => set.Service.Name, StringComparer.Ordinal)
                .ToDictionary(set => set.Service.Name, set => set.Balancer.Address, StringComparer.Ordinal);
            var access = new UpAccess(
                WriteSigningKey(options.OutputDirectory, deployment.Issuer),
                deployment.Issuer,
                deployment.Issuer.Issue(DevelopmentCaller.ForOwner(SampleOwner)));
            await output.WriteAsync(Describe(step.Label, publicServices, access, deployment.Dashboard?.Url)).ConfigureAwait(false);
            await output.FlushAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                await Task.Delay(Timeout.Infinite, cancellationToken).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                // Ctrl-C is how this command ends: the deployment stops every process it started.
            }
        }

        return 0;
    }

    /// <summary>Where a public service serves its API reference page when it is on.</summary>
    internal const string ApiReferencePath = "scalar/v1";

    /// <summary>The public services' API reference pages on, as a user exploring the system wants them.</summary>
    internal static ValuesTree ApiReferenceValues { get; } = ValuesTree.From(new Dictionary<string, object?>
    {
        ["gateway"] = ApiReferenceOn(),
        ["ingestion"] = ApiReferenceOn(),
    });

    private static Dictionary<string, object?> ApiReferenceOn() => new()
    {
        ["settings"] = new Dictionary<string, object?> { ["ApiReference"] = new Dictionary<string, object?> { ["Enabled"] = true } },
    };

    /// <summary>A seeded owner whose invoices exist in every step of scenario A (the seed's first).</summary>
    internal static string SampleOwner => new LoadDriver.Scenarios.SeededOwners().IdAt(0);

    /// <summary>What to point a load at: the public services' addresses, a token, how to mint more, and the dashboard.</summary>
    internal static string Describe(string stepLabel, IReadOnlyDictionary<string, Uri> publicServices, UpAccess access, Uri? dashboard)
    {
        var text = new System.Text.StringBuilder();
        text.AppendLine($"The system runs step {stepLabel}; Ctrl-C stops it.");
        foreach (var (name, address) in publicServices)
        {
            text.AppendLine($"  {name,-10} {address}   API reference: {new Uri(address, ApiReferencePath)}");
        }

        if (dashboard is not null)
        {
            text.AppendLine($"  dashboard  {dashboard}   (traces, metrics and logs of every process)");
        }

        text.AppendLine($"  signing key {access.KeyFile} (issuer {access.Issuer.Issuer}, audience {access.Issuer.Audience})");
        text.AppendLine($"  a token:   dotnet run -c Release --project src/Tools/LoadDriver -- token --signing-key-file {access.KeyFile} --operator");
        text.AppendLine($"  {SampleOwner}'s token (valid {DevelopmentIssuer.DefaultLifetime.TotalMinutes:0} minutes; the .http files in docs/api take it as @token):");
        text.AppendLine($"    {access.OwnerToken}");
        if (publicServices.TryGetValue("gateway", out var gateway))
        {
            text.AppendLine("  try:");
            text.AppendLine($"    curl -H \"Authorization: Bearer {access.OwnerToken}\" \"{new Uri(gateway, $"api/invoices/{SampleOwner}?year={GatewayScenario.Year}&month=1")}\"");
        }

        return text.ToString();
    }

    /// <summary>
    /// Writes the development issuer's base64 key to <c>signing-key</c> in <paramref name="directory"/>, readable by
    /// its owner only: whoever reads it can mint tokens for every owner of this system.
    /// </summary>
    internal static string WriteSigningKey(string directory, DevelopmentIssuer issuer)
    {
        Directory.CreateDirectory(directory);
        var file = Path.Combine(directory, "signing-key");
        File.Delete(file); // the mode below applies only to a file this call creates
        var options = new FileStreamOptions { Mode = FileMode.Create, Access = FileAccess.Write };
        if (!OperatingSystem.IsWindows())
        {
            options.UnixCreateMode = UnixFileMode.UserRead | UnixFileMode.UserWrite;
        }

        using (var stream = new FileStream(file, options))
        using (var writer = new StreamWriter(stream))
        {
            writer.Write(issuer.SigningKey);
        }

        return file;
    }
}

/// <summary>What <c>up</c> hands out to reach its public services: the signing key's file, its issuer, and a token for <see cref="UpRunner.SampleOwner"/>.</summary>
internal sealed record UpAccess(string KeyFile, DevelopmentIssuer Issuer, string OwnerToken);
