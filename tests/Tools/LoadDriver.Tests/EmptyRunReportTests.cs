using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Scenarios;

namespace DroneDelivery.LoadDriver.Tests;

public sealed class EmptyRunReportTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("empty-run-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public async Task A_run_cancelled_before_any_request_finished_still_writes_its_files()
    {
        using var cancelled = new CancellationTokenSource();
        await cancelled.CancelAsync();
        var plan = new LoadTestPlan
        {
            Scenario = new InvoiceScenario(new InvoiceScenarioOptions { Gateway = new Uri("http://127.0.0.1:9/"), Year = 2025 }),
            Shape = OpenLoad.Constant(10, TimeSpan.FromSeconds(5)),
        };

        var result = await LoadRunner.RunAsync(plan, null, cancelled.Token);
        var files = result.WriteFiles(_directory);

        Assert.Equal(StopReason.Cancelled, result.StopReason);
        Assert.Equal(0, LoadReport.ReadJson(files[0]).Latency.Count);
    }
}
