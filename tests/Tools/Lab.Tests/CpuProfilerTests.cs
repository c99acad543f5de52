using System.Diagnostics;
using System.Globalization;
using System.Xml.Linq;
using DroneDelivery.Lab.Profiling;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;
using Xunit.Abstractions;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The CPU profiler on a real process: a test-only program whose main thread works in one method at a steady rate
/// while other threads wait (<see cref="BusyForProfiling"/>). Its profile must name that method among the frames with
/// the most samples. The process's CPU for the same work with and without the session, in the same run, is written
/// to the test's output as the session's cost — measured, not asserted, since it depends on the machine.
/// </summary>
public sealed class CpuProfilerTests(ITestOutputHelper output)
{
    /// <summary>About as many threads as a service of this system has that are not running at a given moment.</summary>
    private const int WaitingThreads = 16;

    /// <summary>The share of a core the busy process's work takes without a session: a fixed amount of work a second.</summary>
    private const double Share = 0.5;

    private static readonly TimeSpan Window = TimeSpan.FromSeconds(3);

    [Fact]
    public async Task A_busy_process_profile_names_its_spinning_method_among_the_top_frames_and_the_session_cost_is_measured()
    {
        var progress = new ProgressLines();
        await using var busy = await LocalProcess.StartAsync(BusyProcess());
        busy.OutputLine += progress.Add;
        Assert.True(await Eventually.TrueAsync(() => progress.Count >= 3, TimeSpan.FromSeconds(30)), "The busy process printed no progress.");
        var directory = Directory.CreateTempSubdirectory("cpu-profile-test-");
        try
        {
            var trace = CpuProfiler.TraceFileBeside(Path.Combine(directory.FullName, "busy.svg"));
            var without = await MeasureAsync(busy, progress, () => Task.Delay(Window));
            var session = TimeSpan.Zero;
            var with = await MeasureAsync(busy, progress, async () => session = await CpuProfiler.CollectAsync(busy.ProcessId, Window, trace, CancellationToken.None));
            output.WriteLine($"without a session: {without}");
            output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"with a session:    {with} (session {session.TotalSeconds:0.00} s, its start, stop and rundown included)"));
            output.WriteLine(string.Create(
                CultureInfo.InvariantCulture,
                $"session cost: {with.Cores - without.Cores:+0.000;-0.000} cores for the process, of which {with.OtherCores - without.OtherCores:+0.000;-0.000} in the runtime's own threads; {100 * ((with.WorkerMicrosecondsPerRound / without.WorkerMicrosecondsPerRound) - 1):+0.0;-0.0} % of the working thread's CPU per round ({WaitingThreads} waiting threads beside it)"));

            var profile = CpuProfiler.Read(trace, busy.ProcessId, "busy-for-profiling", session);
            var top = profile.FlameGraph().TopFrames(10);
            output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{profile.Samples} samples running managed code, {profile.ExternalSamples} outside it, types reported: {profile.SampleTypesReported}"));
            output.WriteLine(top.ToString());

            Assert.True(new FileInfo(trace).Length > 0);
            Assert.Contains(BusyForProfiling.SpinningFrame, top.ByTotal.Select(f => f.Frame));
            Assert.Contains(profile.Stacks, s => s.Frames[^1] == BusyForProfiling.SpinningFrame);
            Assert.DoesNotContain(profile.Stacks, s => CpuProfiler.IsSafePointPoll(s.Frames[^1]));
            var svg = Path.Combine(directory.FullName, "busy.svg");
            profile.Write(svg);
            var drawn = XDocument.Load(svg);
            Assert.Contains(drawn.Descendants(XName.Get("title", "http://www.w3.org/2000/svg")), t => t.Value.StartsWith(BusyForProfiling.SpinningFrame + " — ", StringComparison.Ordinal));
            Assert.Contains(drawn.Descendants(XName.Get("text", "http://www.w3.org/2000/svg")), t => t.Value == profile.Description);
            Assert.Contains(BusyForProfiling.SpinningFrame, File.ReadAllText(Path.Combine(directory.FullName, "busy.txt")), StringComparison.Ordinal);
            Assert.Equal(profile.Stacks, File.ReadAllLines(Path.Combine(directory.FullName, "busy.folded")).Select(FoldedStack.Parse), new FoldedStackComparer());
        }
        finally
        {
            directory.Delete(recursive: true);
        }
    }

    [Fact]
    public async Task A_cancelled_profile_stops_its_session_and_leaves_the_process_running_to_be_profiled_again()
    {
        await using var busy = await LocalProcess.StartAsync(BusyProcess());
        var trace = Path.Combine(Path.GetTempPath(), $"cpu-profile-test-{Guid.NewGuid():N}.nettrace");
        try
        {
            using var cancel = new CancellationTokenSource(TimeSpan.FromMilliseconds(500));
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => CpuProfiler.CollectAsync(busy.ProcessId, TimeSpan.FromMinutes(5), trace, cancel.Token));
        }
        finally
        {
            File.Delete(trace);
        }

        Assert.False(busy.Exited.IsCompleted, "The process ended with the cancelled profile.");
        var profile = await CpuProfiler.ProfileAsync(busy.ProcessId, TimeSpan.FromSeconds(2), CancellationToken.None);

        Assert.Equal("DroneDelivery.Lab.Tests", profile.ProcessName);
        Assert.Null(profile.TraceFile);
        Assert.Contains(BusyForProfiling.SpinningFrame, profile.FlameGraph().TopFrames(10).ByTotal.Select(f => f.Frame));
        Assert.False(busy.Exited.IsCompleted, "The process ended with its profile.");
    }

    [Fact]
    public async Task A_process_without_a_dotnet_runtime_is_refused_with_its_name()
    {
        using var sleep = Process.Start(new ProcessStartInfo("sleep", "30") { UseShellExecute = false })!;
        try
        {
            var refusal = await Assert.ThrowsAsync<InvalidOperationException>(() => CpuProfiler.ProfileAsync(sleep.Id, TimeSpan.FromSeconds(1), CancellationToken.None));
            Assert.Contains($"sleep (pid {sleep.Id})", refusal.Message, StringComparison.Ordinal);
        }
        finally
        {
            sleep.Kill();
        }
    }

    [Theory]
    [InlineData("System.Threading.Thread.Sleep(int32)", "System.Private.CoreLib", 0x10UL, "System.Threading.Thread.Sleep")]
    [InlineData("DroneDelivery.Lab.Tests.BusyForProfiling.Run", "DroneDelivery.Lab.Tests", 0x10UL, "DroneDelivery.Lab.Tests.BusyForProfiling.Run")]
    [InlineData("", "libcoreclr", 0x7f00abcUL, "libcoreclr!0x7f00abc")]
    [InlineData(null, null, 0x7f00abcUL, "?")]
    public void A_frame_is_named_by_its_method_without_parameters_else_by_its_module_and_address(string? method, string? module, ulong address, string expected) =>
        Assert.Equal(expected, CpuProfiler.FrameName(method, module, address));

    [Theory]
    [InlineData("DroneDelivery.Delivery", "dotnet", "/repo/artifacts/bin/DroneDelivery.Delivery/release/DroneDelivery.Delivery.dll", "--urls", "http://127.0.0.1:5001")]
    [InlineData("testhost", "/usr/share/dotnet/dotnet", "exec", "--runtimeconfig", "a.runtimeconfig.json", "--depsfile", "a.deps.json", "/sdk/testhost.dll", "--port", "4711")]
    [InlineData(null, "/usr/bin/redis-server", "--port", "6379")]
    [InlineData(null, "dotnet", "--info")]
    public void A_dotnet_process_is_named_by_its_entry_assembly(string? expected, params string[] commandLine) =>
        Assert.Equal(expected, CpuProfiler.EntryAssembly(commandLine));

    [Theory]
    [InlineData("System.Threading.Thread.PollGC", true)]
    [InlineData("System.Threading.Thread.<PollGC>g__PollGCWorker|67_0", true)]
    [InlineData("System.Threading.Thread.Sleep", false)]
    [InlineData("DroneDelivery.Lab.Tests.BusyForProfiling.SpinInDistinctMethod", false)]
    public void The_runtimes_safe_point_poll_is_told_apart(string frame, bool poll) =>
        Assert.Equal(poll, CpuProfiler.IsSafePointPoll(frame));

    private static LocalProcessSpec BusyProcess()
    {
        var spec = LocalProcessSpec.ForProject(
            "busy-for-profiling",
            "DroneDelivery.Lab.Tests",
            BusyForProfiling.Command,
            WaitingThreads.ToString(CultureInfo.InvariantCulture),
            Share.ToString(CultureInfo.InvariantCulture));
        return spec with
        {
            IsReadyLine = line => line == BusyForProfiling.ReadyLine,
            Environment = new Dictionary<string, string?> { [BusyForProfiling.StartupHookVariable] = spec.Arguments[0] },
        };
    }

    /// <summary>
    /// The process's CPU over what <paramref name="stretch"/> took, by thread (<c>/proc/PID/task</c>): the working
    /// thread's, the waiting ones', and the runtime's own threads'; and its rounds of work a second by its own clock.
    /// </summary>
    private static async Task<Rates> MeasureAsync(LocalProcess process, ProgressLines progress, Func<Task> stretch)
    {
        var clock = Stopwatch.StartNew();
        var before = ThreadTimes(process.ProcessId);
        var first = progress.Latest;
        await stretch();
        var last = progress.Latest;
        var after = ThreadTimes(process.ProcessId);
        var seconds = clock.Elapsed.TotalSeconds;
        var used = after.ToDictionary(t => t.Key, t => (t.Value.Name, Seconds: t.Value.Seconds - before.GetValueOrDefault(t.Key).Seconds));
        var worker = used.GetValueOrDefault(process.ProcessId).Seconds;
        var others = used.Where(t => t.Key != process.ProcessId && !t.Value.Name.StartsWith("waiting-", StringComparison.Ordinal)).ToList();
        var rounds = last.Rounds - first.Rounds;
        return new Rates(
            used.Values.Sum(t => t.Seconds) / seconds,
            worker / seconds,
            others.Sum(t => t.Value.Seconds) / seconds,
            [.. others.Where(t => t.Value.Seconds > 0).GroupBy(t => t.Value.Name).Select(g => (g.Key, g.Sum(t => t.Value.Seconds) / seconds)).OrderByDescending(t => t.Item2).Take(3)],
            1000.0 * rounds / Math.Max(1, last.Milliseconds - first.Milliseconds),
            1e6 * worker / Math.Max(1, rounds));
    }

    /// <summary>Each thread's name and CPU time so far, from <c>/proc/PID/task/TID/stat</c> (user and system, in clock ticks of 10 ms).</summary>
    private static Dictionary<int, (string Name, double Seconds)> ThreadTimes(int processId)
    {
        var times = new Dictionary<int, (string Name, double Seconds)>();
        foreach (var task in Directory.EnumerateDirectories($"/proc/{processId}/task"))
        {
            try
            {
                var stat = File.ReadAllText(Path.Combine(task, "stat"));
                var name = stat[(stat.IndexOf('(', StringComparison.Ordinal) + 1)..stat.LastIndexOf(')')];
                var fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
                var ticks = long.Parse(fields[11], CultureInfo.InvariantCulture) + long.Parse(fields[12], CultureInfo.InvariantCulture);
                times[int.Parse(Path.GetFileName(task), CultureInfo.InvariantCulture)] = (name, ticks / 100.0);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // A thread that ended meanwhile.
            }
        }

        return times;
    }

    private sealed record Rates(double Cores, double WorkerCores, double OtherCores, IReadOnlyList<(string Name, double Cores)> Busiest, double RoundsPerSecond, double WorkerMicrosecondsPerRound)
    {
        public override string ToString() => string.Create(
            CultureInfo.InvariantCulture,
            $"{Cores:0.000} cores: working thread {WorkerCores:0.000}, runtime's threads {OtherCores:0.000} ({string.Join(", ", Busiest.Select(b => $"{b.Name} {b.Cores:0.000}"))}); {RoundsPerSecond:0} rounds/s, {WorkerMicrosecondsPerRound:0.0} µs of the working thread per round");
    }

    private sealed class FoldedStackComparer : IEqualityComparer<FoldedStack>
    {
        public bool Equals(FoldedStack? x, FoldedStack? y) => x?.ToString() == y?.ToString();

        public int GetHashCode(FoldedStack obj) => obj.ToString().GetHashCode(StringComparison.Ordinal);
    }

    /// <summary>The busy process's progress lines as they arrive.</summary>
    private sealed class ProgressLines
    {
        private readonly Lock _sync = new();
        private (long Milliseconds, long Rounds) _latest;
        private int _count;

        public int Count
        {
            get
            {
                lock (_sync)
                {
                    return _count;
                }
            }
        }

        public (long Milliseconds, long Rounds) Latest
        {
            get
            {
                lock (_sync)
                {
                    return _latest;
                }
            }
        }

        public void Add(string line)
        {
            if (BusyForProfiling.Progress(line) is { } progress)
            {
                lock (_sync)
                {
                    _latest = progress;
                    _count++;
                }
            }
        }
    }
}
