using DroneDelivery.Lab.Scenarios;

namespace DroneDelivery.Lab.Tests;

/// <summary>The calibration as a file: what <c>calibration</c> prints, <c>--calibration</c> reads back.</summary>
public sealed class CalibrationFileTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("calibration-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Theory]
    [InlineData(LabCalibration.DefaultProfile)]
    [InlineData(LabCalibration.NoLatencyProfile)]
    public void A_printed_profile_read_back_from_a_file_is_the_same_calibration(string profile)
    {
        var printed = CalibrationFile.ToJson(CalibrationFile.Load(profile));
        var path = Write("printed.json", printed);

        var read = CalibrationFile.Load(path);

        Assert.Equal(path, read.Name);
        Assert.Equal(printed, CalibrationFile.ToJson(read));
    }

    [Fact]
    public void The_no_latency_profile_turns_every_injected_delay_off_and_keeps_the_rest()
    {
        var none = CalibrationFile.Load(LabCalibration.NoLatencyProfile);
        var standard = CalibrationFile.Load(LabCalibration.DefaultProfile);

        Assert.Equal(0, none.CosmosLatency.FixedMilliseconds + none.CosmosLatency.PerDocumentMilliseconds + none.CosmosLatency.ThrottledMilliseconds);
        Assert.Equal(new(0, 0, 0), none.ServiceBusLatency);
        Assert.True(standard.CosmosLatency.FixedMilliseconds > 0);
        Assert.Equal(standard.InvoiceRatePerUser, none.InvoiceRatePerUser);
        Assert.Equal(standard.QuickTimeScale, none.QuickTimeScale);
    }

    [Fact]
    public void A_file_with_some_values_keeps_the_defaults_for_the_others()
    {
        var read = CalibrationFile.Load(Write("partial.json", """
            // more RU-hungry users
            { "invoiceRatePerUser": 4, "cosmosLatency": { "fixedMilliseconds": 10, "perDocumentMilliseconds": 0, "throttledMilliseconds": 1 }, }
            """));

        Assert.Equal(4, read.InvoiceRatePerUser);
        Assert.Equal(10, read.CosmosLatency.FixedMilliseconds);
        Assert.Equal(new LabCalibration().DeliveryRequestPeakRate, read.DeliveryRequestPeakRate);
    }

    [Theory]
    [InlineData("""{ "invoiceRatePerUser": 2, "thinkTime": 1 }""", "thinkTime")]
    [InlineData("""{ "invoiceRatePerUser": "fast" }""", "invoiceRatePerUser")]
    [InlineData("""{ "quickTimeScale": 0.5 }""", "quickTimeScale must be at least 1")]
    [InlineData("""{ "quickReplicaDivisor": 0 }""", "quickReplicaDivisor must be at least 1")]
    [InlineData("""{ "quickReplicaDivisor": 1.5 }""", "quickReplicaDivisor")]
    [InlineData("""{ "cosmosLatency": { "fixedMilliseconds": -5, "perDocumentMilliseconds": 0, "throttledMilliseconds": 1 } }""", "cosmosLatency.fixedMilliseconds")]
    [InlineData("""{ "serviceBusLatency": { "sendMilliseconds": 1 } }""", "receiveMilliseconds")]
    [InlineData("""{ "invoiceTimeoutMargin": 0.5 }""", "invoiceTimeoutMargin must be at least 1")]
    [InlineData("""{ "cpuBudgetShare": 1.5 }""", "cpuBudgetShare must be at least 0.05 and at most 1")]
    [InlineData("""{ "minimumScale": 0 }""", "minimumScale must be at least 0.01")]
    [InlineData("""{ "cosmosLatency": { "exponentialMeanMilliseconds": -1 } }""", "cosmosLatency.exponentialMeanMilliseconds must be at least 0")]
    [InlineData("""{ "invoiceRatePerUser": 2 """, "bad.json")]
    public void A_bad_file_is_refused_naming_the_file_and_the_setting(string json, string named)
    {
        var path = Write("bad.json", json);

        var error = Assert.Throws<CalibrationException>(() => CalibrationFile.Load(path));

        Assert.Contains(path, error.Message, StringComparison.Ordinal);
        Assert.Contains(named, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void An_unknown_name_lists_the_built_in_profiles()
    {
        var error = Assert.Throws<CalibrationException>(() => CalibrationFile.Load("fast"));

        Assert.Contains("default, no-latency", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_calibration_command_prints_a_profile_and_run_refuses_a_bad_file_before_starting_anything()
    {
        using (var print = new LabProcess("calibration", LabCalibration.NoLatencyProfile))
        {
            Assert.Equal(0, await print.ExitCodeAsync(TimeSpan.FromMinutes(2)));
            Assert.Equal(CalibrationFile.Load(LabCalibration.NoLatencyProfile).ServiceBusLatency, CalibrationFile.Parse(print.Output, "stdout").ServiceBusLatency);
        }

        var bad = Write("bad.json", """{ "quickTimeScale": 0 }""");
        using var run = new LabProcess("run", "A", "--steps", "A1", "--calibration", bad, "--output", Path.Combine(_directory, "report"));
        Assert.Equal(2, await run.ExitCodeAsync(TimeSpan.FromMinutes(2)));
        Assert.Contains("quickTimeScale must be at least 1", run.Output, StringComparison.Ordinal);
        Assert.False(Directory.Exists(Path.Combine(_directory, "report")));
    }

    private string Write(string name, string json)
    {
        var path = Path.Combine(_directory, name);
        File.WriteAllText(path, json);
        return path;
    }
}
