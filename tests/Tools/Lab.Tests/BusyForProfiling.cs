using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// A process kept busy for the profiler's tests only: its main thread works in <see cref="SpinInDistinctMethod"/>, a
/// method no other code has, at a steady rate of rounds of work, and a given number of other threads only wait, as
/// most of a service's threads do. It prints how many rounds it has done every 100 ms (<c>spins MS ROUNDS CHECK</c>,
/// on its own clock; the check digit keeps the work from being optimised away), so that a test can tell how much work
/// it did in any stretch of time. It runs until the test that started it ends it
/// (<see cref="LocalProcesses.LocalProcess"/>).
/// </summary>
/// <remarks>
/// <c>dotnet DroneDelivery.Lab.Tests.dll busy-for-profiling WAITING-THREADS SHARE</c> with
/// <see cref="StartupHookVariable"/> naming this assembly: the runtime calls <see cref="StartupHook.Initialize"/>
/// before the assembly's entry point (<see cref="LabHostProgram"/>), and that runs this program instead. SHARE is
/// the share of one core its rounds take, measured when it starts: a fixed amount of work a second, so that whatever
/// more CPU it uses while it is profiled is the profile's cost.
/// </remarks>
public static class BusyForProfiling
{
    public const string Command = "busy-for-profiling";

    public const string ReadyLine = "spinning";

    /// <summary>The runtime's variable naming the assemblies whose <c>StartupHook.Initialize</c> runs before Main.</summary>
    public const string StartupHookVariable = "DOTNET_STARTUP_HOOKS";

    /// <summary>The working method's frame as a profile names it.</summary>
    public const string SpinningFrame = "DroneDelivery.Lab.Tests.BusyForProfiling.SpinInDistinctMethod";

    private const string ProgressPrefix = "spins ";

    private static readonly TimeSpan Calibration = TimeSpan.FromMilliseconds(300);

    public static int Run(int waitingThreads, double share)
    {
        using var never = new ManualResetEventSlim();
        for (var i = 0; i < waitingThreads; i++)
        {
            new Thread(() => never.Wait()) { IsBackground = true, Name = $"waiting-{i}" }.Start();
        }

        SpinInDistinctMethod(share);
        return 0;
    }

    /// <summary>
    /// Work that only a CPU can do, for ever: rounds of a xorshift generator's numbers, summed; as many as it can for
    /// 300 ms, then as many a second as <paramref name="share"/> of those (the thread sleeps 5 ms whenever it is
    /// ahead); and a progress line every 100 ms. Everything the thread does happens in this method or below it, so
    /// that every sample of the thread has it on its stack wherever the runtime stops the thread for a sample.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void SpinInDistinctMethod(double share)
    {
        var clock = Stopwatch.StartNew();
        var perSecond = double.PositiveInfinity;
        var state = 1UL;
        var sum = 0UL;
        var rounds = 0L;
        var next = Calibration.TotalMilliseconds;
        while (true)
        {
            if (rounds < perSecond * clock.Elapsed.TotalSeconds)
            {
                for (var i = 0; i < 20_000; i++)
                {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    sum += state & 0xff;
                }

                rounds++;
            }
            else
            {
                Thread.Sleep(5);
            }

            if (clock.ElapsedMilliseconds >= next)
            {
                if (double.IsPositiveInfinity(perSecond))
                {
                    perSecond = share * rounds / clock.Elapsed.TotalSeconds;
                    Console.WriteLine(ReadyLine);
                }

                Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{ProgressPrefix}{clock.ElapsedMilliseconds} {rounds} {sum % 10}"));
                next += 100;
            }
        }
    }

    /// <summary>A progress line's clock (ms) and rounds; null for any other line.</summary>
    public static (long Milliseconds, long Rounds)? Progress(string line)
    {
        if (!line.StartsWith(ProgressPrefix, StringComparison.Ordinal))
        {
            return null;
        }

        var fields = line[ProgressPrefix.Length..].Split(' ');
        return fields.Length == 3
            && long.TryParse(fields[0], CultureInfo.InvariantCulture, out var milliseconds)
            && long.TryParse(fields[1], CultureInfo.InvariantCulture, out var rounds)
            ? (milliseconds, rounds)
            : null;
    }
}
