using System.Text.Json;
using System.Text.RegularExpressions;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Scenarios;
using Xunit;

// Each end-to-end test starts a whole system; two at once on a small machine would measure each
// other, not the steps.
[assembly: CollectionBehavior(DisableTestParallelization = true)]

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// One quick lab run over the steps whose effects are the heart of each case study — A1 (429s),
/// A3 (parallel fan-out), B4 (prefetch with short locks) and B5 (long locks) — shared by the tests
/// below. The figures are checked from <c>results.json</c>, not from the lab's own verdicts, so a wrong
/// verdict rule cannot hide a missing effect. The run has a real Prometheus beside it
/// (<c>--prometheus</c>) for the dashboards' queries (DashboardQueryTests).
/// </summary>
public sealed class QuickLabRun : IAsyncLifetime
{
    /// <summary>
    /// .ci/run's time-out for the test session of the timing runs (<c>Category=Lab</c>, this run and the
    /// dashboards' queries over it), which run alone (RunConfiguration.TestSessionTimeout).
    /// </summary>
    internal static readonly TimeSpan SessionTimeout = TimeSpan.FromSeconds(780);

    /// <summary>
    /// The quick run gets the session's time-out less a minute for starting the test host, so a run too
    /// slow for the session fails here with its output rather than being cut off by the time-out with none.
    /// </summary>
    internal static readonly TimeSpan Bound = SessionTimeout - TimeSpan.FromMinutes(1);

    /// <summary>
    /// The built-in calibration, given as a file the way a user gives one (<c>--calibration</c>): quick mode's
    /// time compressed 15× and the chart's replicas halved, with a disturbed step's first measurement kept
    /// (<c>--no-remeasure</c>) so four steps fit the session on a busy 2-core machine. The effects checked here
    /// are relative to each step's own load, so they show at this size too.
    /// </summary>
    internal static readonly LabCalibration Calibration = new();

    private readonly string _calibrationDirectory = Directory.CreateTempSubdirectory("dronedelivery-calibration-").FullName;

    public int PrometheusPort { get; } = DroneDelivery.LocalProcesses.FreePort.Next();

    public DateTimeOffset Started { get; private set; }

    public DateTimeOffset Ended { get; private set; }

    public string Output { get; } = Directory.CreateTempSubdirectory("dronedelivery-lab-").FullName;

    public int ExitCode { get; private set; }

    public string Console { get; private set; } = string.Empty;

    public IReadOnlyList<string> Leftovers { get; private set; } = [];

    public JsonElement Results { get; private set; }

    public async Task InitializeAsync()
    {
        Started = DateTimeOffset.UtcNow;
        var calibration = Path.Combine(_calibrationDirectory, "calibration.json");
        await File.WriteAllTextAsync(calibration, CalibrationFile.ToJson(Calibration));
        using var lab = new LabProcess(
            "run", "A", "B", "--quick", "--steps", "A1,A3,B4,B5", "--output", Output, "--calibration", calibration, "--no-remeasure",
            "--prometheus", PrometheusPort.ToString(System.Globalization.CultureInfo.InvariantCulture));
        ExitCode = await lab.ExitCodeAsync(Bound);
        Ended = DateTimeOffset.UtcNow;
        Console = lab.Output;
        Leftovers = lab.Leftovers();
        var results = Path.Combine(Output, "results.json");
        Results = File.Exists(results) ? JsonDocument.Parse(File.ReadAllText(results)).RootElement.Clone() : default;
    }

    public JsonElement Step(string id) =>
        Results.GetProperty("scenarios").EnumerateArray()
            .SelectMany(s => s.GetProperty("steps").EnumerateArray())
            .Single(s => s.GetProperty("id").GetString() == id);

    public Task DisposeAsync()
    {
        Directory.Delete(Output, recursive: true);
        Directory.Delete(_calibrationDirectory, recursive: true);
        return Task.CompletedTask;
    }
}

/// <summary>The test classes that share one quick lab run.</summary>
[CollectionDefinition(Name)]
public sealed class QuickLabRunCollection : ICollectionFixture<QuickLabRun>
{
    public const string Name = "quick lab run";
}

[Trait("Category", "Lab")]
[Collection(QuickLabRunCollection.Name)]
public sealed class QuickLabRunTests(QuickLabRun run)
{
    [Fact]
    public void The_run_ends_with_every_expectation_met_and_nothing_left_running()
    {
        Assert.True(run.ExitCode == 0, $"exit code {run.ExitCode}{Environment.NewLine}{run.Console}");
        Assert.Contains("Every step showed the effect its article describes.", run.Console, StringComparison.Ordinal);
        Assert.Empty(run.Leftovers);
    }

    [Fact]
    public void A1_throttles_and_A3_parallel_queries_cut_the_latency()
    {
        var a1 = run.Step("A1");
        var a3 = run.Step("A3");
        Assert.True(a1.GetProperty("cosmos").GetProperty("throttledRequests").GetInt64() > 0, a1.ToString());

        // A3's 2,500 RU/s are not checked for an end of throttling: its nine queries per invoice go out at once,
        // and whether the users' peak asks for more than 2,500 RU/s depends on how fast this machine serves them
        // (a fast one, or one catching up after a stall, does). The lab's own verdicts are about latency and
        // throughput, and so are these: parallel queries cut the latency and carry more invoices.
        Assert.True(
            a3.GetProperty("averageLatencyMs").GetDouble() < 0.6 * a1.GetProperty("averageLatencyMs").GetDouble(),
            $"A3 {a3.GetProperty("averageLatencyMs")} ms vs A1 {a1.GetProperty("averageLatencyMs")} ms");
        Assert.True(
            a3.GetProperty("throughput").GetDouble() >= 1.2 * a1.GetProperty("throughput").GetDouble(),
            $"A3 {a3.GetProperty("throughput")} vs A1 {a1.GetProperty("throughput")} invoices/s");

        // The utilization query fans out to the 9 physical partitions (a single-partition query makes one call): a
        // throttled call is made again, and an invoice its user gave up on stops before it has visited them all.
        var cosmos = a3.GetProperty("cosmos");
        var throttledPerOperation = cosmos.GetProperty("throttledRequests").GetInt64() / (double)Math.Max(1, cosmos.GetProperty("operations").GetInt64());
        Assert.InRange(cosmos.GetProperty("callsPerOperation").GetDouble() - throttledPerOperation, 7, 9.5);
        Assert.InRange(a3.GetProperty("cosmos").GetProperty("requestUnitsPerOperation").GetDouble(), 20, 40);
    }

    [Fact]
    public void B4_redelivers_after_lost_locks_and_B5s_longer_lock_dead_letters_nothing()
    {
        var b4 = run.Step("B4").GetProperty("pipeline");
        var b5 = run.Step("B5").GetProperty("pipeline");

        Assert.True(b4.GetProperty("outgoing").GetInt64() > b4.GetProperty("incoming").GetInt64(), b4.ToString());
        // Locks expire in the prefetch buffer for a good share of the messages. (Whether some expire
        // often enough to be dead-lettered depends on how fast this machine drains the backlog: the
        // lab requires it in full runs only.)
        static double LockLostShare(JsonElement pipeline) => pipeline.GetProperty("lockLost").GetInt64() / (double)Math.Max(1, pipeline.GetProperty("incoming").GetInt64());
        Assert.True(LockLostShare(b4) >= 0.05, b4.ToString());

        // The longer lock: far fewer locks lost per message (none on a quiet machine; a machine that stands
        // still for seconds can still outlast some), and none dead-lettered.
        Assert.True(LockLostShare(b5) <= LockLostShare(b4) / 2, $"lock-lost per incoming message: B5 {LockLostShare(b5):0.000} vs B4 {LockLostShare(b4):0.000}");
        Assert.Equal(0, b5.GetProperty("deadLettered").GetInt64());

        // Nothing lost: every request Ingestion acknowledged (202) is in the queue, and every queued
        // message was completed or is still waiting. (How many are still waiting when the drain window
        // closes depends on the machine.)
        Assert.True(b5.GetProperty("incoming").GetInt64() >= run.Step("B5").GetProperty("successes").GetInt64(), b5.ToString());
        Assert.True(b5.GetProperty("completed").GetInt64() > 0, b5.ToString());
        // A message the workflow retries later is completed and comes back as a scheduled copy, counted as incoming.
        Assert.Equal(
            b5.GetProperty("incoming").GetInt64(),
            b5.GetProperty("completed").GetInt64() + b5.GetProperty("activeAtEnd").GetInt64() + b5.GetProperty("scheduledAtEnd").GetInt64());
    }

    [Fact]
    public void The_report_page_shows_every_chart_and_every_chart_has_data()
    {
        var html = File.ReadAllText(Path.Combine(run.Output, "index.html"));
        var images = Regex.Matches(html, "<img src=\"([^\"]+)\"").Select(m => m.Groups[1].Value).ToList();
        Assert.Contains(images, i => i.Contains("A1-", StringComparison.Ordinal));
        Assert.Contains(images, i => i.Contains("B4-incoming-outgoing", StringComparison.Ordinal));
        foreach (var image in images)
        {
            var path = Path.Combine(run.Output, image);
            Assert.True(File.Exists(path), $"{image} is referenced by index.html but missing");
            var svg = File.ReadAllText(path);
            Assert.StartsWith("<svg", svg, StringComparison.Ordinal);
            if (Regex.IsMatch(image, @"^charts/[AB][0-9]-(throughput|incoming-outgoing)\.svg$"))
            {
                // A series over the step's seconds is one path of many segments; axes and grid lines have one each.
                var longest = Regex.Matches(svg, "<path d=\"([^\"]+)\"").Max(m => m.Groups[1].Value.Count(c => c == 'L'));
                Assert.True(longest >= 20, $"{image} draws no series (longest path has {longest} segments)");
            }
        }

        var report = File.ReadAllText(Path.Combine(run.Output, "report.md"));
        Assert.Contains("| metric | A1 article | A1 here |", report, StringComparison.Ordinal);
        Assert.Contains("### Step B5", report, StringComparison.Ordinal);
    }

    [Fact]
    public void Every_step_shows_its_diagnosis_hops_USE_table_and_a_traced_request()
    {
        var steps = run.Results.GetProperty("scenarios").EnumerateArray().SelectMany(s => s.GetProperty("steps").EnumerateArray()).ToList();
        var report = File.ReadAllText(Path.Combine(run.Output, "report.md"));

        Assert.Equal(steps.Count, Regex.Matches(report, @"^\*\*Diagnosis\*\* \(", RegexOptions.Multiline).Count);
        foreach (var step in steps)
        {
            var id = step.GetProperty("id").GetString()!;
            Assert.False(string.IsNullOrEmpty(step.GetProperty("diagnosis").GetProperty("rule").GetString()), id);
            Assert.NotEmpty(step.GetProperty("hops").EnumerateArray());
            Assert.NotEmpty(step.GetProperty("use").EnumerateArray());
            Assert.True(step.GetProperty("trace").ValueKind == JsonValueKind.Object, $"{id} has no traced request");
            Assert.True(step.GetProperty("trace").GetProperty("spans").GetInt32() >= 4, $"{id}'s traced request has too few spans");
            Assert.True(File.Exists(Path.Combine(run.Output, "steps", id, LabRunner.TraceFileName)), $"{id}'s waterfall is missing");
        }

        // The steps whose required effects are a throttled container and lost locks are diagnosed as such.
        string Rule(string id) => steps.Single(s => s.GetProperty("id").GetString() == id).GetProperty("diagnosis").GetProperty("rule").GetString()!;
        Assert.Equal("cosmos-throttled", Rule("A1"));
        Assert.Equal("locks-lost", Rule("B4"));
    }
}

[Trait("Category", "LabFaults")]
public sealed class LabInterruptTests
{
    private static bool IsWatchdog(string process) =>
        process.Contains("parent=$1", StringComparison.Ordinal) || process.EndsWith(": sleep 1 ", StringComparison.Ordinal) || process.EndsWith(": sleep 1", StringComparison.Ordinal);

    /// <summary>How long this class's two tests may take (see <see cref="LabFaults.SessionTimeout"/>): each takes seconds, but starting and stopping a lab on a busy machine may take a minute each.</summary>
    internal static readonly TimeSpan Bound = TimeSpan.FromMinutes(5);

    [Fact]
    public async Task Ctrl_C_stops_the_lab_and_every_process_it_started()
    {
        await WithLabStartingServicesAsync(async lab =>
        {
            Assert.NotEmpty(lab.Leftovers());
            // Every process the lab starts inherits the runtime settings it sets (ChildRuntime): what the lab measures
            // is its processes' steady state, none recompiling hot code in the background or watching files.
            Assert.Empty(lab.StartedWithout([.. ChildRuntime.Variables.Select(v => $"{v.Key}={v.Value}")]));

            lab.Interrupt();

            // Interrupted in its first seconds, the lab stops a dozen processes that are still starting, each
            // gracefully (SIGTERM, a kill after 10 s): once, on a clean clone, that took more than a minute.
            Assert.Equal(130, await lab.ExitCodeAsync(TimeSpan.FromMinutes(2)));

            // The lab stops what it started before it exits, rather than leaving it to the watchdogs: no service,
            // emulator or redis is left. The watchdogs themselves (a shell polling its parent every second) end on
            // their next poll, so they are waited for.
            Assert.DoesNotContain(lab.Leftovers(), p => !IsWatchdog(p));
            await AssertNothingLeftAsync(lab);
        });
    }

    [Fact]
    public async Task A_lab_past_its_time_out_is_stopped_as_by_Ctrl_C_and_leaves_nothing_running()
    {
        await WithLabStartingServicesAsync(async lab =>
        {
            // A time-out while the lab is still starting its services: killing its process tree at that moment
            // could miss a replica being started. The lab is given Ctrl-C, so it stops what it started itself
            // (exit code 130, not a kill's), and whatever still carries the run's marker is killed after it.
            await Assert.ThrowsAsync<TimeoutException>(() => lab.ExitCodeAsync(TimeSpan.FromMilliseconds(1)));

            Assert.Equal(130, lab.ExitCode);
            await AssertNothingLeftAsync(lab);
        });
    }

    /// <summary>Starts a lab and runs <paramref name="test"/> once it is starting its services.</summary>
    private static async Task WithLabStartingServicesAsync(Func<LabProcess, Task> test)
    {
        var output = Directory.CreateTempSubdirectory("dronedelivery-lab-").FullName;
        try
        {
            // A third of the chart's replicas: the tests are about what the lab stops, not how many.
            using var lab = new LabProcess("run", "B", "--quick", "--steps", "B5", "--replica-divisor", "3", "--output", output);
            Assert.True(
                await TestSupport.Eventually.TrueAsync(() => lab.Output.Contains("starting 1 × workflow", StringComparison.Ordinal), TimeSpan.FromMinutes(1), TimeSpan.FromMilliseconds(200)),
                lab.Output);
            await test(lab);
        }
        finally
        {
            Directory.Delete(output, recursive: true);
        }
    }

    private static async Task AssertNothingLeftAsync(LabProcess lab) =>
        Assert.True(await TestSupport.Eventually.TrueAsync(() => lab.Leftovers().Count == 0, TimeSpan.FromSeconds(20), TimeSpan.FromMilliseconds(200)), string.Join(Environment.NewLine, lab.Leftovers()));
}

/// <summary>
/// The lab's end-to-end tests of failure and stopping (<c>Category=LabFaults</c>: chaos, Ctrl-C, a killed
/// test host, a machine-bound step, <c>up</c>): what is lost or left running, not timing. .ci/run runs them in a session of their own, so the
/// timing run's time-out is its own.
/// </summary>
internal static class LabFaults
{
    /// <summary>.ci/run's time-out for their test session: their bounds, and a minute for the test host.</summary>
    internal static readonly TimeSpan SessionTimeout = ChaosRunTests.Bound + LabInterruptTests.Bound + LabHostKilledTests.Bound + MachineBoundRunTests.Bound + UpDashboardTests.Bound + TimeSpan.FromMinutes(1);
}
