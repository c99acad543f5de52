using DroneDelivery.LoadDriver.Cli;
using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.LoadDriver.Tests;

public sealed class CommandLineTests : IDisposable
{
    private readonly string _output = Path.Combine(Path.GetTempPath(), "load-driver-tests", Guid.NewGuid().ToString("N"));

    public void Dispose()
    {
        if (Directory.Exists(_output))
        {
            Directory.Delete(_output, recursive: true);
        }
    }

    [Fact]
    public async Task An_invoice_run_prints_progress_lines_and_a_summary_and_writes_json_and_csv()
    {
        await using var server = await RecordingServer.StartAsync();

        var (exitCode, output, error) = await RunAsync(
            "invoice", "--target", server.BaseUri.AbsoluteUri, "--rate", "20:1500ms", "--year", "2024", "--months", "2-3",
            "--owners", "7", "--out", _output, "--progress-every", "500ms");

        Assert.True(exitCode == 0, error + output);
        // Not a terminal, so progress comes as plain lines.
        Assert.Contains("req/s (ok", output, StringComparison.Ordinal);
        Assert.Contains("stopped: Completed", output, StringComparison.Ordinal);
        Assert.Contains("latency (ms): p50", output, StringComparison.Ordinal);
        Assert.Equal(30, server.Requests.Count);
        Assert.All(server.Requests, path => Assert.Matches(@"^/api/invoices/owner-000[0-6]\?year=2024&month=[23]$", path));

        var report = LoadReport.ReadJson(Path.Combine(_output, LoadReport.JsonFileName));
        Assert.Equal("invoice", report.Scenario);
        Assert.Equal(30, report.Totals.Successes);
        Assert.Equal("open", report.Shape.Model);
        var timeSeries = await File.ReadAllLinesAsync(Path.Combine(_output, LoadReport.TimeSeriesFileName));
        Assert.StartsWith("second,interval_s,requests,", timeSeries[0], StringComparison.Ordinal);
        Assert.Equal(report.TimeSeries.Count + 1, timeSeries.Length);
        Assert.Contains("200,30", await File.ReadAllTextAsync(Path.Combine(_output, LoadReport.StatusCountsFileName)), StringComparison.Ordinal);
        Assert.Contains("request,100,", await File.ReadAllTextAsync(Path.Combine(_output, LoadReport.PercentilesFileName)), StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_delivery_requests_run_with_polling_reports_completions()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        ingestion.CreatedAfter = TimeSpan.FromMilliseconds(100);
        ingestion.CompletedAfter = TimeSpan.FromMilliseconds(200);

        var (exitCode, output, error) = await RunAsync(
            "delivery-requests", "--target", ingestion.BaseUri.AbsoluteUri, "--step", "2:2:0:1s", "--think", "100ms",
            "--poll", "--poll-interval", "50ms", "--poll-max-wait", "5s", "--completed-stage", "Completed", "--out", _output, "--progress", "none");

        Assert.True(exitCode == 0, error + output);
        var report = LoadReport.ReadJson(Path.Combine(_output, LoadReport.JsonFileName));
        Assert.Equal("closed", report.Shape.Model);
        Assert.Equal(100, report.Shape.ThinkTimeMs);
        Assert.NotNull(report.Completion);
        Assert.Equal(ingestion.Posts, report.Completion.Counts.Completed);
        Assert.True(report.Completion.Latency.MinMs >= 200);
        Assert.Contains("completion latency (ms): p50", output, StringComparison.Ordinal);
        Assert.Contains("completion,100,", await File.ReadAllTextAsync(Path.Combine(_output, LoadReport.PercentilesFileName)), StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_terminated_run_stops_at_once_and_still_writes_what_it_measured()
    {
        await using var server = await RecordingServer.StartAsync();
        var spec = LocalProcessSpec.ForProject(
            "load-driver", "DroneDelivery.LoadDriver",
            "invoice", "--target", server.BaseUri.AbsoluteUri, "--rate", "20:5m", "--out", _output, "--progress", "plain", "--progress-every", "200ms") with
        {
            // Ready once a progress line shows responses (a cold start on a busy machine can take a while).
            IsReadyLine = line => System.Text.RegularExpressions.Regex.IsMatch(line, @"req/s \(ok [1-9]"),
        };

        var driver = await LocalProcess.StartAsync(spec);
        await driver.DisposeAsync(); // SIGTERM
        var exitCode = await driver.Exited;

        Assert.True(exitCode == LoadDriverCommand.CancelledExitCode, string.Join('\n', driver.RecentOutput));
        Assert.Contains(driver.RecentOutput, line => line.StartsWith("stopped: Cancelled", StringComparison.Ordinal));
        var report = LoadReport.ReadJson(Path.Combine(_output, LoadReport.JsonFileName));
        Assert.Equal(StopReason.Cancelled, report.StopReason);
        Assert.True(report.Totals.Successes > 0, $"{report.Totals} {string.Join(",", report.StatusCounts)} {string.Join(" | ", report.ErrorSamples)}");
        Assert.True(report.LoadSeconds < 60);
    }

    [Fact]
    public async Task Results_that_cannot_be_written_fail_with_exit_code_2_and_the_reason()
    {
        await using var server = await RecordingServer.StartAsync();
        Directory.CreateDirectory(_output);
        var blocker = Path.Combine(_output, "a-file");
        await File.WriteAllTextAsync(blocker, "not a directory");

        var (exitCode, output, error) = await RunAsync(
            "invoice", "--target", server.BaseUri.AbsoluteUri, "--rate", "5:400ms", "--out", Path.Combine(blocker, "results"), "--progress", "none");

        Assert.Equal(LoadDriverCommand.InvalidPlanExitCode, exitCode);
        Assert.Contains("could not write the results", error, StringComparison.Ordinal);
        // The summary was printed before the write failed, so the measurements are not lost.
        Assert.Contains("stopped: Completed", output, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("invoice --step 1:x:8m", "'x' is not a whole number of users to")]
    [InlineData("invoice --rate 50 ", "is not an arrival rate")]
    [InlineData("invoice --step 1:2:1s --rate 5:1s", "not both")]
    [InlineData("invoice --rate 5:1s --think 1s", "closed model (--step) only")]
    [InlineData("invoice --target not-a-url", "not an absolute http or https URL")]
    [InlineData("invoice --timeout soon", "not a duration")]
    [InlineData("invoice --frobnicate", "frobnicate")]
    public async Task Malformed_arguments_fail_with_a_message_and_send_nothing(string arguments, string message)
    {
        var (exitCode, output, error) = await RunAsync(arguments.Split(' ', StringSplitOptions.RemoveEmptyEntries));

        Assert.NotEqual(0, exitCode);
        Assert.Contains(message, error + output, StringComparison.Ordinal);
        Assert.False(Directory.Exists(_output));
    }

    [Theory]
    [InlineData("invoice --step 0:0:1s", "At least one user")]
    [InlineData("invoice --rate 5:1s --max-requests 0", "request bound")]
    [InlineData("invoice --rate 5:1s --connect-timeout 0s", "connect timeout must be above 0")]
    [InlineData("invoice --months 4-2", "months must be 1-12")]
    [InlineData("delivery-requests --poll --poll-max-wait 2h", "maximum completion wait")]
    public async Task Invalid_plans_fail_with_exit_code_2_and_the_reason(string arguments, string message)
    {
        var (exitCode, _, error) = await RunAsync(arguments.Split(' '));

        Assert.Equal(LoadDriverCommand.InvalidPlanExitCode, exitCode);
        Assert.Contains(message, error, StringComparison.Ordinal);
    }

    private static async Task<(int ExitCode, string Output, string Error)> RunAsync(params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var exitCode = await LoadDriverCommand.RunAsync(args, new CliConsole(output, error, IsTerminal: false));
        return (exitCode, output.ToString(), error.ToString());
    }
}
