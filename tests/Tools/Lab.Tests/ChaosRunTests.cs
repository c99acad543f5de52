using System.Text.Json;
using Xunit;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The chaos command's CI mode end to end: B5 under load while replicas are killed, redis-server restarted,
/// Cosmos DB answers errors, Service Bus drops connections and is busy, and a third of every service dies at
/// once. The figures are read from <c>chaos.json</c>, which the command builds from the stores themselves.
/// </summary>
[Trait("Category", "LabFaults")]
public sealed class ChaosRunTests
{
    /// <summary>The CI mode takes about 3 minutes on 2 cores; a run too slow for the session fails here with its output.</summary>
    internal static readonly TimeSpan Bound = TimeSpan.FromMinutes(5);

    [Fact]
    public async Task Under_kills_restarts_and_injected_faults_no_accepted_request_is_lost_duplicated_or_left_half_done()
    {
        var output = Directory.CreateTempSubdirectory("dronedelivery-chaos-").FullName;
        try
        {
            using var lab = new LabProcess("chaos", "--ci", "--output", output);
            var exitCode = await lab.ExitCodeAsync(Bound);
            var file = Path.Combine(output, "chaos.json");
            Assert.True(File.Exists(file), $"No chaos.json (exit code {exitCode}). Output:{Environment.NewLine}{lab.Output}");
            var report = JsonDocument.Parse(await File.ReadAllTextAsync(file)).RootElement;
            long Figure(string name) => report.GetProperty(name).GetInt64();
            var context = $"Output:{Environment.NewLine}{lab.Output}";

            // The faults really ran: without a kill, a restart or an injected error the verdicts below prove nothing.
            Assert.True(Figure("replicasKilled") >= 4, context);
            Assert.True(Figure("redisRestarts") >= 1, context);
            var injected = report.GetProperty("injectedFaults").EnumerateObject().ToDictionary(p => p.Name, p => p.Value.GetInt64());
            Assert.Contains(injected, i => i.Key.StartsWith("cosmos ", StringComparison.Ordinal) && i.Value > 0);
            Assert.Contains(injected, i => i.Key.StartsWith("servicebus ", StringComparison.Ordinal) && i.Value > 0);

            Assert.True(Figure("accepted") > 100, context);
            Assert.True(Figure("completed") > 0, context);
            Assert.Equal(0, Figure("lost"));
            Assert.Equal(0, Figure("unaccounted"));
            Assert.Equal(0, Figure("duplicated"));
            Assert.Equal(0, Figure("halfDone"));
            Assert.Equal(0, Figure("transientDeadLetters"));
            Assert.Empty(lab.Leftovers());
        }
        finally
        {
            Directory.Delete(output, recursive: true);
        }
    }
}
