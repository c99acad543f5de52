using System.Diagnostics;
using System.Globalization;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.TestSupport;

/// <summary>
/// The one runner for generated hostile-input tests: runs a property in batches with FsCheck (a failure shrinks to a
/// minimal input), calls a check after every batch (the system under test still serves a valid request), bounds each
/// case's work so a hang fails the case instead of the run, and counts the cases run.
/// </summary>
public static class HostileInputRunner
{
    /// <summary>Cases per target in the normal test run.</summary>
    public const int Cases = 10_000;

    private const int BatchSize = 1_000;

    /// <summary>Runs <paramref name="cases"/> cases of <paramref name="check"/> and returns how many ran.</summary>
    public static int Run<T>(string target, Arbitrary<T> inputs, int cases, Action<T> check, Action afterBatch)
    {
        var count = 0;
        for (var done = 0; done < cases; done += BatchSize)
        {
            var batch = Math.Min(BatchSize, cases - done);
            var config = Config.QuickThrowOnFailure.WithMaxTest(batch).WithQuietOnSuccess(true).WithName(target);
            Check.One(config, Prop.ForAll(inputs, (T input) =>
            {
                Interlocked.Increment(ref count);
                check(input);
            }));
            afterBatch();
        }

        return count;
    }

    /// <summary>
    /// Runs <paramref name="work"/> on a pool thread and waits at most <paramref name="bound"/>: its result, or the
    /// exception it threw; no result within the bound fails the case as a hang, naming <paramref name="input"/>.
    /// </summary>
    public static (T? Result, Exception? Error) Bounded<T>(object input, TimeSpan bound, Func<T> work)
    {
        var task = Task.Run(work);
        try
        {
            return task.Wait(bound)
                ? (task.Result, null)
                : throw new TimeoutException($"{input}: no result within {bound.TotalSeconds} s (a hang).");
        }
        catch (AggregateException e)
        {
            return (default, e.InnerException);
        }
    }

    /// <summary>Runs a target's paths and prints the cases each ran and how long it took.</summary>
    public static void Report(ITestOutputHelper output, string target, string verdict, params (string Path, Func<int> Run)[] paths)
    {
        var clock = Stopwatch.StartNew();
        var counts = new List<string>();
        foreach (var (path, run) in paths)
        {
            var count = run();
            counts.Add($"{count.ToString("N0", CultureInfo.InvariantCulture)} {path}");
        }

        output.WriteLine($"hostile input, {target}: {string.Join(", ", counts)}; {verdict}; {clock.Elapsed.TotalSeconds:0.0} s");
    }
}
