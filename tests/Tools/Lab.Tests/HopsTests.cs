using DroneDelivery.Lab.Measurement;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// Where the time goes, from the services' own metrics: a step of A1 recorded from a running system (one replica of
/// each service's <c>/metrics</c> after 125 invoices, <c>Recorded/A1/</c>), read as the lab reads two snapshots.
/// </summary>
public sealed class HopsTests
{
    private static readonly MetricsSnapshot Start = new(0, new Dictionary<string, IReadOnlyList<PrometheusSample>>());

    [Fact]
    public void The_gateways_three_calls_are_hops_and_the_slowest_is_the_critical_path()
    {
        var hops = Hops.Between(Start, Recorded("A1", seconds: 25));

        var gateway = hops.Where(h => h.From == "gateway").ToDictionary(h => h.To);
        Assert.Equal(["delivery", "dronescheduler", "package"], gateway.Keys.Order(StringComparer.Ordinal));
        Assert.All(gateway.Values, h => Assert.Equal(125 / 25.0, h.CallsPerSecond, 3));
        // 33 of 125 calls within 0.5 s and 112 within 0.75 s: the median lies between, interpolated.
        Assert.InRange(gateway["dronescheduler"].P50Ms, 500, 750);
        Assert.True(gateway["dronescheduler"].P50Ms > 5 * gateway["package"].P50Ms, string.Join(Environment.NewLine, hops));
        Assert.True(gateway["dronescheduler"].OnCriticalPath);
        Assert.False(gateway["package"].OnCriticalPath);
        Assert.False(gateway["delivery"].OnCriticalPath);
    }

    [Fact]
    public void DroneSchedulers_Cosmos_DB_queries_are_nine_per_invoice_and_each_a_fraction_of_its_call()
    {
        var hops = Hops.Between(Start, Recorded("A1", seconds: 25));

        var invoiceCall = hops.Single(h => h is { From: "gateway", To: "dronescheduler" });
        var query = hops.Single(h => h is { From: "dronescheduler", To: "Cosmos DB query" });
        var plans = hops.Single(h => h is { From: "dronescheduler", To: "Cosmos DB query_plan" });
        Assert.Equal(9, query.CallsPerSecond / plans.CallsPerSecond, 0.5);
        Assert.True(query.P50Ms < invoiceCall.P50Ms / 3, $"{query} vs {invoiceCall}");
        Assert.Contains(hops, h => h is { From: "delivery", To: "Redis SCARD" });
    }

    [Fact]
    public void Each_container_a_service_calls_is_a_hop_of_its_own()
    {
        // A service that queries two containers: one fast, one whose calls are throttled and slow.
        const string Text = """
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="packages",db_operation_name="query",http_response_status_code="200",le="0.01"} 90
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="packages",db_operation_name="query",http_response_status_code="200",le="0.5"} 100
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="packages",db_operation_name="query",http_response_status_code="200",le="+Inf"} 100
            dronedelivery_cosmos_call_duration_seconds_count{db_collection_name="packages",db_operation_name="query",http_response_status_code="200"} 100
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="utilization",db_operation_name="query",http_response_status_code="200",le="0.01"} 0
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="utilization",db_operation_name="query",http_response_status_code="200",le="0.5"} 40
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="utilization",db_operation_name="query",http_response_status_code="200",le="+Inf"} 40
            dronedelivery_cosmos_call_duration_seconds_count{db_collection_name="utilization",db_operation_name="query",http_response_status_code="200"} 40
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="utilization",db_operation_name="query",http_response_status_code="429",le="0.01"} 10
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="utilization",db_operation_name="query",http_response_status_code="429",le="0.5"} 10
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="utilization",db_operation_name="query",http_response_status_code="429",le="+Inf"} 10
            dronedelivery_cosmos_call_duration_seconds_count{db_collection_name="utilization",db_operation_name="query",http_response_status_code="429"} 10
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="none",db_operation_name="read_account",http_response_status_code="200",le="0.01"} 1
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="none",db_operation_name="read_account",http_response_status_code="200",le="0.5"} 1
            dronedelivery_cosmos_call_duration_seconds_bucket{db_collection_name="none",db_operation_name="read_account",http_response_status_code="200",le="+Inf"} 1
            dronedelivery_cosmos_call_duration_seconds_count{db_collection_name="none",db_operation_name="read_account",http_response_status_code="200"} 1
            """;
        var after = new MetricsSnapshot(10, new Dictionary<string, IReadOnlyList<PrometheusSample>> { ["package"] = [.. PrometheusText.Parse(Text)] });

        var hops = Hops.Between(Start, after).ToDictionary(h => h.To);

        Assert.Equal(["Cosmos DB packages query", "Cosmos DB read_account", "Cosmos DB utilization query"], hops.Keys.Order(StringComparer.Ordinal));
        Assert.Equal((10.0, 0L), (hops["Cosmos DB packages query"].CallsPerSecond, hops["Cosmos DB packages query"].Retries));
        Assert.Equal((5.0, 10L), (hops["Cosmos DB utilization query"].CallsPerSecond, hops["Cosmos DB utilization query"].Retries));
        Assert.True(hops["Cosmos DB utilization query"].OnCriticalPath);
        Assert.True(Hops.IsCosmos(hops["Cosmos DB utilization query"], "query"));
        Assert.False(Hops.IsCosmos(hops["Cosmos DB read_account"], "query"));
    }

    [Fact]
    public void Nothing_called_between_the_snapshots_is_no_hop_and_counters_that_went_back_count_nothing()
    {
        var recorded = Recorded("A1", seconds: 25);

        Assert.Empty(Hops.Between(recorded, recorded with { Second = 50 }));
        // A replica restarted between the snapshots: its counters start again below where they were.
        Assert.Empty(Hops.Between(Recorded("A1", seconds: 0, times: 2), recorded));
        Assert.Equal(2 * 125 / 25.0, Hops.Between(recorded with { Second = 0 }, Recorded("A1", seconds: 25, times: 3)).First(h => h.From == "gateway").CallsPerSecond, 3);
    }

    [Theory]
    [InlineData(0.5, 0.75)]
    [InlineData(0.25, 0.625)]
    [InlineData(0.99, 0.995)]
    public void A_quantile_is_interpolated_inside_its_bucket(double q, double expected)
    {
        // 100 values: none up to 0.5, all by 1.0.
        var cumulative = new SortedDictionary<double, double> { [0.5] = 0, [1.0] = 100, [double.PositiveInfinity] = 100 };

        Assert.Equal(expected, Hops.Quantile(cumulative, q), 3);
    }

    /// <summary>The recorded scrapes as a snapshot taken <paramref name="seconds"/> after an empty one; <paramref name="times"/> multiplies every value.</summary>
    private static MetricsSnapshot Recorded(string step, double seconds, double times = 1)
    {
        var directory = RepositoryLayout.InRepository("tests", "Tools", "Lab.Tests", "Recorded", step);
        return new MetricsSnapshot(seconds, Directory.EnumerateFiles(directory, "*.prom").ToDictionary(
            file => Path.GetFileNameWithoutExtension(file),
            file => (IReadOnlyList<PrometheusSample>)[.. PrometheusText.Parse(File.ReadAllText(file)).Select(s => s with { Value = s.Value * times })]));
    }
}
