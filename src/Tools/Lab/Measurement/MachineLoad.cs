namespace DroneDelivery.Lab.Measurement;

/// <summary>The machine's load averages, printed beside every figure the lab reports: a busy machine shows in them.</summary>
internal static class MachineLoad
{
    /// <summary>The 1-, 5- and 15-minute load averages from /proc/loadavg, e.g. <c>0.42, 0.51, 0.60 (2 cores)</c>.</summary>
    public static string Describe()
    {
        try
        {
            var fields = File.ReadAllText("/proc/loadavg").Split(' ', StringSplitOptions.RemoveEmptyEntries);
            return $"{fields[0]}, {fields[1]}, {fields[2]} ({Environment.ProcessorCount} cores)";
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or IndexOutOfRangeException)
        {
            return $"unknown ({Environment.ProcessorCount} cores)";
        }
    }
}
