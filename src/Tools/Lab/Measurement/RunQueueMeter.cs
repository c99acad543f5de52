using System.Globalization;

namespace DroneDelivery.Lab.Measurement;

/// <summary>
/// Time the threads of a set of processes ran on a core and waited in a run queue for one, from Linux's
/// per-thread <c>/proc/&lt;pid&gt;/task/&lt;tid&gt;/schedstat</c> (nanoseconds run, nanoseconds waited, slices). The
/// wait is the CPU's saturation as the system feels it: a thread ready to run that no core takes, because
/// other threads hold the cores or a CPU quota has run out for its period. What other processes take shows
/// in it only as far as it delays the system.
/// </summary>
internal sealed class RunQueueMeter
{
    private Dictionary<int, SchedTime> _previous = [];

    /// <summary>Run and wait time of one thread so far.</summary>
    internal readonly record struct SchedTime(TimeSpan Ran, TimeSpan Waited)
    {
        public static SchedTime operator +(SchedTime a, SchedTime b) => new(a.Ran + b.Ran, a.Waited + b.Waited);

        public static SchedTime operator -(SchedTime a, SchedTime b) => new(a.Ran - b.Ran, a.Waited - b.Waited);
    }

    /// <summary>
    /// What the threads of <paramref name="processIds"/> ran and waited since the last call (nothing on the first).
    /// Threads are followed one by one: a thread that ends takes its time with it, and a sum per process would
    /// then go backwards.
    /// </summary>
    public SchedTime Sample(IEnumerable<int> processIds)
    {
        var current = new Dictionary<int, SchedTime>();
        var delta = default(SchedTime);
        foreach (var pid in processIds.Where(p => p > 0).Distinct())
        {
            foreach (var (tid, time) in Threads(pid))
            {
                current[tid] = time;
                if (_previous.TryGetValue(tid, out var before) && time.Ran >= before.Ran && time.Waited >= before.Waited)
                {
                    delta += time - before;
                }
            }
        }

        _previous = current;
        return delta;
    }

    /// <summary>Each thread of a process and its time; none when the process has ended or /proc cannot be read.</summary>
    internal static IEnumerable<(int Tid, SchedTime Time)> Threads(int pid)
    {
        string[] tasks;
        try
        {
            tasks = Directory.GetDirectories($"/proc/{pid}/task");
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            yield break;
        }

        foreach (var task in tasks)
        {
            string line;
            try
            {
                line = File.ReadAllText(Path.Combine(task, "schedstat"));
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                continue;
            }

            if (int.TryParse(Path.GetFileName(task), NumberStyles.None, CultureInfo.InvariantCulture, out var tid) && Parse(line) is { } time)
            {
                yield return (tid, time);
            }
        }
    }

    /// <summary>Reads <c>schedstat</c>'s first two fields: nanoseconds on a core, nanoseconds waiting in a run queue.</summary>
    internal static SchedTime? Parse(string line)
    {
        var fields = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
        return fields.Length >= 2
            && long.TryParse(fields[0], NumberStyles.None, CultureInfo.InvariantCulture, out var ran)
            && long.TryParse(fields[1], NumberStyles.None, CultureInfo.InvariantCulture, out var waited)
            ? new SchedTime(TimeSpan.FromTicks(ran / 100), TimeSpan.FromTicks(waited / 100))
            : null;
    }
}
