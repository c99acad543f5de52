using System.Globalization;
using System.Runtime.InteropServices;

namespace DroneDelivery.Lab.Measurement;

/// <summary>CPU time the whole machine has spent, from the first line of <c>/proc/stat</c>, in seconds.</summary>
/// <param name="Busy">Time running programs at normal or higher priority: user and system (interrupt time is left out: the kernel spends it on everyone's behalf, the lab's loopback traffic included).</param>
/// <param name="Niced">Time running programs at a lower priority (a positive nice value): they yield the cores to programs at normal priority.</param>
/// <param name="Steal">Time a hypervisor gave this machine's CPUs to someone else.</param>
internal readonly record struct MachineCpu(double Busy, double Niced, double Steal)
{
    /// <summary>The kernel's clock ticks per second for /proc/stat (USER_HZ), 100 on every Linux build that matters.</summary>
    private const double TicksPerSecond = 100;

    public static MachineCpu operator -(MachineCpu after, MachineCpu before) => new(after.Busy - before.Busy, after.Niced - before.Niced, after.Steal - before.Steal);

    /// <summary>
    /// The time that competed with a program at this process's priority: programs at normal priority, and niced
    /// ones too when this process is niced itself (then the lab's own time is among them).
    /// </summary>
    public double Competing => Busy + (RunsNiced ? Niced : 0);

    /// <summary>Whether this process runs at a lower priority than normal (started under <c>nice</c>).</summary>
    private static readonly bool RunsNiced = OperatingSystem.IsLinux() && Niceness() > 0;

    /// <summary>The machine's CPU time so far; null where /proc/stat cannot be read (not Linux).</summary>
    public static MachineCpu? Read()
    {
        try
        {
            using var reader = new StreamReader("/proc/stat");
            return Parse(reader.ReadLine());
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return null;
        }
    }

    /// <summary>Reads the aggregate line: <c>cpu user nice system idle iowait irq softirq steal …</c> (in ticks).</summary>
    internal static MachineCpu? Parse(string? line)
    {
        var fields = line?.Split(' ', StringSplitOptions.RemoveEmptyEntries);
        if (fields is not { Length: >= 9 } || fields[0] != "cpu")
        {
            return null;
        }

        double Field(int index) => double.Parse(fields[index], CultureInfo.InvariantCulture) / TicksPerSecond;
        return new MachineCpu(Field(1) + Field(3), Field(2), Field(8));
    }

    /// <summary>
    /// The machine's online cores, whatever quota this process runs under (<see cref="Environment.ProcessorCount"/>
    /// counts the quota): the <c>cpuN</c> lines of /proc/stat; the quota's count where they cannot be read.
    /// </summary>
    public static int HardwareCores { get; } = CountCores();

    private static int CountCores()
    {
        try
        {
            var cores = File.ReadLines("/proc/stat").Count(l => l.StartsWith("cpu", StringComparison.Ordinal) && l.Length > 3 && char.IsAsciiDigit(l[3]));
            return Math.Max(Environment.ProcessorCount, cores);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return Environment.ProcessorCount;
        }
    }

    private static int Niceness()
    {
        // getpriority(PRIO_PROCESS, 0): this process's nice value. It may legitimately be -1, so errno decides.
        Marshal.SetLastPInvokeError(0);
        var value = getpriority(0, 0);
        return Marshal.GetLastPInvokeError() == 0 ? value : 0;
    }

    [DllImport("libc", SetLastError = true)]
    private static extern int getpriority(int which, int who);
}
