using System.Text.RegularExpressions;
using DroneDelivery.LoadDriver.Scenarios;

namespace DroneDelivery.LoadDriver.Tests;

public class InvoiceScenarioTests
{
    [Fact]
    public async Task Requests_ask_for_seeded_owners_and_months_and_repeat_for_the_same_seed()
    {
        await using var server = await RecordingServer.StartAsync();

        var first = await RunAsync(server, seed: 7);
        var again = await RunAsync(server, seed: 7);
        var other = await RunAsync(server, seed: 8);

        Assert.Equal(60, first.Count);
        Assert.All(first, path => Assert.Matches(new Regex(@"^/api/invoices/owner-000\d\?year=2024&month=[345]$"), path));
        Assert.True(first.Distinct().Count() > 15, "owners and months should vary");
        Assert.Equal(3, first.Select(p => p[^1]).Distinct().Count());
        Assert.Equal(first, again);
        Assert.NotEqual(first, other);
    }

    [Fact]
    public async Task Owner_ids_are_escaped_into_the_path()
    {
        await using var server = await RecordingServer.StartAsync();
        var scenario = new InvoiceScenario(new InvoiceScenarioOptions
        {
            Gateway = server.BaseUri,
            Owners = new SeededOwners("fleet owner/{0}", 1),
            Year = 2025,
            FirstMonth = 2,
            LastMonth = 2,
        });

        await LoadRunner.RunAsync(new LoadTestPlan { Scenario = scenario, Shape = ClosedLoad.Constant(1, TimeSpan.FromSeconds(5)), Bounds = new LoadBounds { MaxRequests = 1 } });

        Assert.Equal("/api/invoices/fleet%20owner%2F0?year=2025&month=2", Assert.Single(server.Requests));
    }

    [Theory]
    [InlineData("owner-{0:D4}", 100, 2025, 5, 3, "months must be 1-12")]
    [InlineData("owner-{0:D4}", 100, 0, 1, 12, "year must be between")]
    [InlineData("owner", 100, 2025, 1, 12, "does not use the owner index")]
    [InlineData("owner-{1}", 100, 2025, 1, 12, "not a valid composite format")]
    [InlineData("owner-{0}", 0, 2025, 1, 12, "owner count must be")]
    [InlineData("owner-{0}", 10_000, 2025, 1, 12, "Owners × months must be at most")]
    public void Invalid_settings_are_rejected_with_the_reason(string format, int owners, int year, int firstMonth, int lastMonth, string reason)
    {
        var scenario = new InvoiceScenario(new InvoiceScenarioOptions
        {
            Gateway = new Uri("http://127.0.0.1:5000/"),
            Owners = new SeededOwners(format, owners),
            Year = year,
            FirstMonth = firstMonth,
            LastMonth = lastMonth,
        });

        var error = Assert.Throws<ArgumentException>(scenario.Validate);
        Assert.Contains(reason, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_relative_or_non_http_target_is_rejected()
    {
        foreach (var target in new[] { new Uri("/api", UriKind.Relative), new Uri("ftp://127.0.0.1/") })
        {
            var scenario = new InvoiceScenario(new InvoiceScenarioOptions { Gateway = target, Year = 2025 });
            Assert.Throws<ArgumentException>(scenario.Validate);
        }
    }

    private static async Task<List<string>> RunAsync(RecordingServer server, int seed)
    {
        var before = server.Requests.Count;
        var scenario = new InvoiceScenario(new InvoiceScenarioOptions
        {
            Gateway = server.BaseUri,
            Owners = new SeededOwners("owner-{0:D4}", 10),
            Year = 2024,
            FirstMonth = 3,
            LastMonth = 5,
            Seed = seed,
        });

        // One user sends in sequence order, so the server sees the sequence as the scenario drew it.
        await LoadRunner.RunAsync(new LoadTestPlan
        {
            Scenario = scenario,
            Shape = ClosedLoad.Constant(1, TimeSpan.FromSeconds(30)),
            Bounds = new LoadBounds { MaxRequests = 60 },
        });
        return [.. server.Requests.Skip(before)];
    }
}
