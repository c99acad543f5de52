using System.Globalization;
using System.Reflection;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// The standalone Aspire dashboard (NuGet package <c>Aspire.Dashboard.Sdk.linux-x64</c>) beside the local system:
/// every service and both emulators send it their traces, metrics and logs over OTLP/gRPC, as they would a
/// collector on a cluster (chart value <c>telemetry.otlpEndpoint</c>). It listens on 127.0.0.1 only and asks
/// for no login — the machine's own users are the audience, as with the lab's other ports — and its
/// telemetry API (<c>/api/telemetry/…</c>) is on, so what it received can be read by a program too.
/// Its telemetry lives in memory and ends with it.
/// </summary>
internal sealed class AspireDashboard : IAsyncDisposable
{
    /// <summary>The metadata entry in which the build records where restore put the dashboard program.</summary>
    internal const string ExecutableMetadata = "AspireDashboard";

    private readonly LocalProcess _process;

    private AspireDashboard(LocalProcess process, int frontendPort, int otlpPort)
    {
        _process = process;
        Url = new Uri($"http://127.0.0.1:{frontendPort.ToString(CultureInfo.InvariantCulture)}/");
        OtlpEndpoint = new Uri($"http://127.0.0.1:{otlpPort.ToString(CultureInfo.InvariantCulture)}");
    }

    /// <summary>The dashboard's pages, and its telemetry API under <c>api/telemetry/</c>.</summary>
    public Uri Url { get; }

    /// <summary>Where OTLP/gRPC goes: the value of <c>telemetry.otlpEndpoint</c> for every process of the system.</summary>
    public Uri OtlpEndpoint { get; }

    public LocalProcess Process => _process;

    /// <summary>The dashboard program as restore placed it; a clear error when it is not there.</summary>
    internal static string Executable()
    {
        var path = typeof(AspireDashboard).Assembly.GetCustomAttributes<AssemblyMetadataAttribute>()
            .FirstOrDefault(a => a.Key == ExecutableMetadata)?.Value
            ?? throw new InvalidOperationException($"The lab was built without the '{ExecutableMetadata}' metadata.");
        if (!File.Exists(path))
        {
            throw new FileNotFoundException(
                $"The Aspire dashboard is not at '{path}'. Restore the lab (dotnet build DroneDelivery.sln) on linux-x64.", path);
        }

        return path;
    }

    public static async Task<AspireDashboard> StartAsync(string workDirectory, CancellationToken cancellationToken)
    {
        var executable = Executable();
        var (frontend, otlp) = (FreePort.Next(), FreePort.Next());
        Directory.CreateDirectory(Path.Combine(workDirectory, "logs"));
        var process = await LocalProcess.StartAsync(
            new LocalProcessSpec
            {
                Name = "aspire-dashboard",
                FileName = executable,
                WorkingDirectory = Path.GetDirectoryName(executable),
                Environment = new Dictionary<string, string?>
                {
                    ["ASPNETCORE_URLS"] = $"http://127.0.0.1:{frontend.ToString(CultureInfo.InvariantCulture)}",
                    ["ASPIRE_DASHBOARD_OTLP_ENDPOINT_URL"] = $"http://127.0.0.1:{otlp.ToString(CultureInfo.InvariantCulture)}",
                    ["ASPIRE_DASHBOARD_UNSECURED_ALLOW_ANONYMOUS"] = "true",
                    ["Dashboard__Api__Enabled"] = "true",
                    ["Dashboard__Api__AuthMode"] = "Unsecured",
                    ["ASPNETCORE_ENVIRONMENT"] = "Production",
                },
                IsReadyLine = line => line.Contains("OTLP/gRPC listening on", StringComparison.Ordinal),
                LogFile = Path.Combine(workDirectory, "logs", "aspire-dashboard.log"),
            },
            cancellationToken).ConfigureAwait(false);
        return new AspireDashboard(process, frontend, otlp);
    }

    public ValueTask DisposeAsync() => _process.DisposeAsync();
}
