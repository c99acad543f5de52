using System.Diagnostics;
using System.Diagnostics.Tracing;
using System.Globalization;
using Microsoft.Diagnostics.NETCore.Client;
using Microsoft.Diagnostics.Tracing;
using Microsoft.Diagnostics.Tracing.Etlx;
using Microsoft.Diagnostics.Tracing.EventPipe;
using Microsoft.Diagnostics.Tracing.Parsers;

namespace DroneDelivery.Lab.Profiling;

/// <summary>One call stack and how many samples found a thread in it: frames from the thread's root to the frame it ran.</summary>
internal sealed record FoldedStack(IReadOnlyList<string> Frames, long Samples)
{
    /// <summary>The stack on one line, frames root first joined by <c>;</c>, then the samples (the usual folded-stack text).</summary>
    public override string ToString() => string.Join(';', Frames) + " " + Samples.ToString(CultureInfo.InvariantCulture);

    /// <summary>Reads one line of folded-stack text (<see cref="ToString"/>): <c>Root;Caller;Callee 12</c>.</summary>
    /// <exception cref="FormatException">The line does not end in a sample count after a space.</exception>
    public static FoldedStack Parse(string line)
    {
        var space = line.LastIndexOf(' ');
        if (space <= 0 || !long.TryParse(line.AsSpan(space + 1), NumberStyles.None, CultureInfo.InvariantCulture, out var samples))
        {
            throw new FormatException($"'{line}' is not a folded stack: frames joined by ';', a space and a sample count.");
        }

        return new FoldedStack(line[..space].Split(';'), samples);
    }
}

/// <summary>
/// A sampled CPU profile of one .NET process: every thread's stack about once a millisecond, threads merged.
/// <see cref="Stacks"/> holds the samples that found a thread running managed code — the process's CPU as the
/// runtime sees it; samples of threads outside managed code (waiting, or in native code and the kernel) are only
/// counted, in <see cref="ExternalSamples"/>.
/// </summary>
/// <param name="ProcessId">The profiled process.</param>
/// <param name="ProcessName">Its name: the entry assembly of a <c>dotnet X.dll</c> process, else the executable's.</param>
/// <param name="Duration">How long the session ran, from its start to its stop.</param>
/// <param name="Stacks">The samples of threads running managed code, one per distinct stack, in a fixed order.</param>
/// <param name="ExternalSamples">The samples of threads outside managed code: waiting, or in native code.</param>
/// <param name="SampleTypesReported">
/// False when the runtime marked no sample as running managed code although threads were sampled — a fault of
/// .NET 9 and early .NET 10 runtimes — so that running and waiting could not be told apart: then
/// <see cref="Stacks"/> holds every sample, waiting threads' too, and <see cref="ExternalSamples"/> is 0.
/// </param>
/// <param name="TraceFile">The nettrace the profile was read from, when it was kept.</param>
internal sealed record CpuProfile(
    int ProcessId,
    string ProcessName,
    TimeSpan Duration,
    IReadOnlyList<FoldedStack> Stacks,
    long ExternalSamples,
    bool SampleTypesReported,
    string? TraceFile)
{
    /// <summary>The samples in <see cref="Stacks"/>.</summary>
    public long Samples => Stacks.Sum(s => s.Samples);

    /// <summary>What the samples are, for the flame graph's second line and the top frames' text.</summary>
    public string Description => SampleTypesReported
        ? string.Create(CultureInfo.InvariantCulture, $"pid {ProcessId}, {Duration.TotalSeconds:0.0} s: the samples of threads running managed code, all threads merged; {ExternalSamples:N0} more of threads waiting or in native code are not drawn.")
        : string.Create(CultureInfo.InvariantCulture, $"pid {ProcessId}, {Duration.TotalSeconds:0.0} s: every thread's samples, waiting ones' too (this runtime does not tell running from waiting), all threads merged.");

    /// <summary>The flame graph of <see cref="Stacks"/>, titled with the process's name and described by <see cref="Description"/>.</summary>
    public FlameGraph FlameGraph() => new(Stacks, ProcessName, Description);

    /// <summary>The profile as folded-stack text, one stack a line (<see cref="FoldedStack.ToString"/>).</summary>
    public string Folded() => string.Concat(Stacks.Select(s => s + "\n"));

    /// <summary>
    /// Writes the flame graph to <paramref name="svgFile"/> and beside it, under the same name, the
    /// <paramref name="topFrames"/> top frames as text (<c>.txt</c>) and the folded stacks (<c>.folded</c>).
    /// </summary>
    public void Write(string svgFile, int topFrames = 25)
    {
        var graph = FlameGraph();
        graph.WriteSvg(svgFile);
        File.WriteAllText(Path.ChangeExtension(svgFile, ".txt"), graph.TopFrames(topFrames) + "\n" + Description + "\n");
        File.WriteAllText(Path.ChangeExtension(svgFile, ".folded"), Folded());
    }
}

/// <summary>
/// Profiles one running .NET process through its diagnostics port: an EventPipe session with the runtime's sample
/// profiler (every managed thread's stack about once a millisecond) and, when the session stops, the runtime's
/// rundown of the methods and modules it has loaded, which gives the sampled addresses their method names. The
/// process is neither stopped nor restarted; what it pays is the session itself — a pause of its managed threads
/// for each sample and the rundown's enumeration at the end. The trace is read back here, in this process.
/// </summary>
internal static class CpuProfiler
{
    /// <summary>The runtime's sample profiler: one ThreadSample event with a stack per managed thread per sample.</summary>
    public const string SampleProfilerProvider = "Microsoft-DotNETCore-SampleProfiler";

    /// <summary>The runtime's own events; here only the loads of modules and of methods compiled during the session.</summary>
    public const string RuntimeProvider = "Microsoft-Windows-DotNETRuntime";

    /// <summary>Where a profile's trace goes when it is kept beside its flame graph: the same name, <c>.nettrace</c>.</summary>
    public static string TraceFileBeside(string svgFile) => Path.ChangeExtension(svgFile, ".nettrace");

    /// <summary>The runtime's buffer for the session's events; the samples of a few seconds of a busy service fill a few MB of it.</summary>
    private const int BufferMegabytes = 64;

    /// <summary>
    /// Profiles <paramref name="processId"/> for <paramref name="duration"/> and reads its stacks. The nettrace goes to
    /// <paramref name="traceFile"/> when one is named (and is kept), else to a temporary file removed afterwards.
    /// Cancelling stops the session (the process is left as it was) and throws <see cref="OperationCanceledException"/>.
    /// </summary>
    /// <exception cref="InvalidOperationException">The process is not a .NET process that can be reached, or it exited during the session.</exception>
    public static async Task<CpuProfile> ProfileAsync(int processId, TimeSpan duration, CancellationToken cancellationToken, string? traceFile = null)
    {
        var processName = NameOf(processId);
        var keep = traceFile is not null;
        var path = traceFile is null
            ? Path.Combine(Path.GetTempPath(), $"cpu-profile-{processId}-{Guid.NewGuid():N}.nettrace")
            : Path.GetFullPath(traceFile);
        try
        {
            var elapsed = await CollectAsync(processId, duration, path, cancellationToken).ConfigureAwait(false);
            return Read(path, processId, processName, elapsed) with { TraceFile = keep ? path : null };
        }
        finally
        {
            if (!keep)
            {
                File.Delete(path);
            }
        }
    }

    /// <summary>
    /// Reads the samples of a nettrace that a session with the sample profiler and the rundown wrote (this class's,
    /// or <c>dotnet-trace</c>'s with <c>--profile dotnet-sampled-thread-time</c>) into a profile of <paramref name="processName"/>.
    /// </summary>
    public static CpuProfile Read(string traceFile, int processId, string processName, TimeSpan duration)
    {
        var etlx = Path.Combine(Path.GetTempPath(), $"cpu-profile-{Guid.NewGuid():N}.etlx");
        try
        {
            TraceLog.CreateFromEventPipeDataFile(traceFile, etlx);
            using var log = new TraceLog(etlx);
            var managed = new Dictionary<string, (string[] Frames, long Samples)>(StringComparer.Ordinal);
            var external = new Dictionary<string, (string[] Frames, long Samples)>(StringComparer.Ordinal);
            var names = new Dictionary<CodeAddressIndex, string>();
            using var source = log.Events.GetSource();
            var samples = new SampleProfilerTraceEventParser(source);
            samples.ThreadSample += sample =>
            {
                var frames = FramesOf(sample.CallStack(), names);
                var into = sample.Type == ClrThreadSampleType.Managed ? managed : external;
                var key = string.Join('\n', frames);
                into[key] = into.TryGetValue(key, out var known) ? (known.Frames, known.Samples + 1) : (frames, 1);
            };
            source.Process();

            var typesReported = managed.Count > 0 || external.Count == 0;
            if (!typesReported)
            {
                (managed, external) = (external, managed);
            }

            return new CpuProfile(
                processId,
                processName,
                duration,
                [.. managed.OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => new FoldedStack(s.Value.Frames, s.Value.Samples))],
                external.Values.Sum(s => s.Samples),
                typesReported,
                traceFile);
        }
        finally
        {
            File.Delete(etlx);
        }
    }

    /// <summary>
    /// The session alone: profiles <paramref name="processId"/> for <paramref name="duration"/> into the nettrace
    /// <paramref name="traceFile"/> (for <see cref="Read"/>) and returns how long the session ran, its start and its
    /// stop with the rundown included. Cancelling stops the session and throws <see cref="OperationCanceledException"/>.
    /// </summary>
    /// <exception cref="InvalidOperationException">The process is not a .NET process that can be reached, or it exited during the session.</exception>
    public static async Task<TimeSpan> CollectAsync(int processId, TimeSpan duration, string traceFile, CancellationToken cancellationToken)
    {
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(duration, TimeSpan.Zero);
        var processName = NameOf(processId);
        var path = Path.GetFullPath(traceFile);
        Directory.CreateDirectory(Path.GetDirectoryName(path)!);
        var client = new DiagnosticsClient(processId);
        var providers = new[]
        {
            new EventPipeProvider(SampleProfilerProvider, EventLevel.Informational),
            new EventPipeProvider(
                RuntimeProvider,
                EventLevel.Verbose,
                (long)(ClrTraceEventParser.Keywords.Loader | ClrTraceEventParser.Keywords.Jit)),
        };
        EventPipeSession session;
        try
        {
            session = await client.StartEventPipeSessionAsync(providers, requestRundown: true, BufferMegabytes, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (e is ServerNotAvailableException or UnsupportedCommandException or ServerErrorException or TimeoutException)
        {
            throw new InvalidOperationException($"Cannot profile {processName} (pid {processId}): its diagnostics port refused a session ({e.Message}).", e);
        }

        using (session)
        {
            var clock = Stopwatch.StartNew();
            await using (var file = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.Read, 1 << 16, useAsync: true))
            {
                // The session's events are read as they come, so that the runtime's buffer never fills and drops samples.
                var copy = session.EventStream.CopyToAsync(file, CancellationToken.None);
                try
                {
                    await Task.WhenAny(Task.Delay(duration, cancellationToken), copy).ConfigureAwait(false);
                }
                finally
                {
                    // Stopped on every way out: a cancelled profile leaves the process without a session.
                    await StopAsync(session).ConfigureAwait(false);
                }

                // After the stop the runtime sends its rundown, then ends the stream.
                await copy.ConfigureAwait(false);
            }

            var elapsed = clock.Elapsed;
            cancellationToken.ThrowIfCancellationRequested();
            if (elapsed < duration && HasExited(processId))
            {
                throw new InvalidOperationException(string.Create(
                    CultureInfo.InvariantCulture, $"{processName} (pid {processId}) exited {elapsed.TotalSeconds:0.0} s into its profile."));
            }

            return elapsed;
        }
    }

    private static async Task StopAsync(EventPipeSession session)
    {
        try
        {
            await session.StopAsync(CancellationToken.None).ConfigureAwait(false);
        }
        catch (Exception e) when (e is ServerNotAvailableException or ServerErrorException or IOException or EndOfStreamException)
        {
            // The process is gone, or the session ended with it.
        }
    }

    /// <summary>
    /// The frames of a sampled stack, root first, without a safe-point poll at its top (<see cref="IsSafePointPoll"/>);
    /// a frame without a method name is its module and address, or "?".
    /// </summary>
    private static string[] FramesOf(TraceCallStack? stack, Dictionary<CodeAddressIndex, string> names)
    {
        var frames = new List<string>();
        for (var frame = stack; frame is not null; frame = frame.Caller)
        {
            var address = frame.CodeAddress;
            if (!names.TryGetValue(address.CodeAddressIndex, out var name))
            {
                name = FrameName(address.FullMethodName, address.ModuleName, address.Address);
                names[address.CodeAddressIndex] = name;
            }

            frames.Add(name);
        }

        frames.Reverse();
        while (frames.Count > 1 && IsSafePointPoll(frames[^1]))
        {
            frames.RemoveAt(frames.Count - 1);
        }

        return [.. frames];
    }

    /// <summary>
    /// The runtime's check for a pending suspension, which a thread runs at a safe point in its caller's loop (after a
    /// call into native code, between chunks of a large copy). The sampler stops threads at such points, so a thread
    /// busy in its caller is often caught in it: its samples belong to the caller, which the poll is left off.
    /// </summary>
    internal static bool IsSafePointPoll(string frame) =>
        frame == "System.Threading.Thread.PollGC" || frame.StartsWith("System.Threading.Thread.<PollGC>", StringComparison.Ordinal);

    /// <summary>
    /// <c>Namespace.Type.Method</c> from a resolved method name (its parameter list left off, so that overloads share
    /// a frame); <c>module!0xADDRESS</c> for an address in a known module without a name; <c>?</c> for one in none.
    /// </summary>
    internal static string FrameName(string? fullMethodName, string? moduleName, ulong address)
    {
        if (!string.IsNullOrEmpty(fullMethodName))
        {
            var parameters = fullMethodName.IndexOf('(', StringComparison.Ordinal);
            return parameters > 0 ? fullMethodName[..parameters] : fullMethodName;
        }

        return string.IsNullOrEmpty(moduleName)
            ? "?"
            : string.Create(CultureInfo.InvariantCulture, $"{moduleName}!0x{address:x}");
    }

    /// <summary>The entry assembly of a <c>dotnet X.dll …</c> process (X), else the executable's name; "pid N" for a process gone.</summary>
    internal static string NameOf(int processId)
    {
        try
        {
            if (EntryAssembly(File.ReadAllText($"/proc/{processId}/cmdline").Split('\0', StringSplitOptions.RemoveEmptyEntries)) is { } assembly)
            {
                return assembly;
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            // Not Linux, or the process is gone: its name from the runtime below.
        }

        try
        {
            using var process = Process.GetProcessById(processId);
            return process.ProcessName;
        }
        catch (Exception e) when (e is ArgumentException or InvalidOperationException)
        {
            return string.Create(CultureInfo.InvariantCulture, $"pid {processId}");
        }
    }

    /// <summary>
    /// X of a command line <c>dotnet X.dll …</c>, or of <c>dotnet exec --runtimeconfig … X.dll …</c> as test hosts run;
    /// null for any other program.
    /// </summary>
    internal static string? EntryAssembly(IReadOnlyList<string> commandLine)
    {
        var assembly = commandLine.Skip(1).FirstOrDefault(a => a.EndsWith(".dll", StringComparison.OrdinalIgnoreCase));
        return commandLine.Count > 0 && Path.GetFileName(commandLine[0]) == "dotnet" && assembly is not null
            ? Path.GetFileNameWithoutExtension(assembly)
            : null;
    }

    private static bool HasExited(int processId)
    {
        try
        {
            using var process = Process.GetProcessById(processId);
            return process.HasExited;
        }
        catch (ArgumentException)
        {
            return true;
        }
    }
}
