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
        var step = new Option<string>("--step") { Description = "The step whose configuration runs (e.g. A4, B5).", DefaultValueFactory = _ => "A4" };
        var calibration = LabCommands.CalibrationOption();
        var command = new Command("up", "Start the system at one step's configuration and keep it running for a load of your own until Ctrl-C.") { step, output, prometheus, calibration };
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
                Calibration = calibrated,
                Log = log,
            };
            return await LabCommands.ExitCodeAsync("system", () => RunAsync(scenario, stepId, options, Console.Out, cancellationToken), cancellationToken).ConfigureAwait(false);
        });
        return command;
    }

    private static async Task<int> RunAsync(LabScenario scenario, string stepId, LabRunOptions options, TextWriter output, CancellationToken cancellationToken)
    {
        var catalog = StepCatalog.Load(options.ChartDirectory);
        var context = await LabRunner.StartAtStepAsync(scenario, catalog, catalog[stepId], options, new Dictionary<ServiceKind, int>(), warmUp: true, cancellationToken).ConfigureAwait(false);
        await using (context.Deployment.ConfigureAwait(false))
        {
            var deployment = context.Deployment;
            // Only what runs: a scenario starts the services it uses (scenario A has no Ingestion).
            var publicServices = deployment.Services.Values.Where(set => set.Service.Public && set.Replicas.Count > 0)
                .OrderBy(set => set.Service.Name, StringComparer.Ordinal)
                .ToDictionary(set => set.Service.Name, set => set.Balancer.Address, StringComparer.Ordinal);
            await output.WriteAsync(Describe(stepId, publicServices, WriteSigningKey(options.OutputDirectory, deployment.Issuer), deployment.Issuer)).ConfigureAwait(false);
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

    /// <summary>What to point a load at: the public services' addresses, and how to get a token for them.</summary>
    internal static string Describe(string stepId, IReadOnlyDictionary<string, Uri> publicServices, string keyFile, DevelopmentIssuer issuer)
    {
        var text = new System.Text.StringBuilder();
        text.AppendLine($"The system runs step {stepId}; Ctrl-C stops it.");
        foreach (var (name, address) in publicServices)
        {
            text.AppendLine($"  {name,-10} {address}");
        }

        text.AppendLine($"  signing key {keyFile} (issuer {issuer.Issuer}, audience {issuer.Audience})");
        text.AppendLine($"  a token:   dotnet run -c Release --project src/Tools/LoadDriver -- token --signing-key-file {keyFile} --operator");
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
