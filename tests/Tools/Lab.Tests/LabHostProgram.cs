namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The test assembly's entry point, which the test runner never calls: <c>dotnet DroneDelivery.Lab.Tests.dll
/// lab-host ARGS…</c> makes this assembly a stand-in test host that starts the lab with ARGS through
/// <see cref="LabProcess"/>, exactly as a test does, prints the lab's pid and marker, and waits for it.
/// <see cref="LabHostKilledTests"/> kills such a host to prove the lab does not outlive it.
/// <c>leak MB-PER-SECOND</c> makes it a process that leaks (<see cref="LeakingProcess"/>).
/// </summary>
public static class LabHostProgram
{
    public const string Command = "lab-host";

    public static int Main(string[] args)
    {
        if (args is [LeakingProcess.Command, var rate] && double.TryParse(rate, System.Globalization.CultureInfo.InvariantCulture, out var megabytesPerSecond))
        {
            return LeakingProcess.Run(megabytesPerSecond);
        }

        if (args is not [Command, .. var labArguments])
        {
            Console.Error.WriteLine($"usage: {Command} <lab arguments> | {LeakingProcess.Command} <MB per second>");
            return 2;
        }

        using var lab = new LabProcess(labArguments);
        Console.WriteLine($"lab {lab.Id} marker {lab.Marker}");
        return lab.ExitCodeAsync(TimeSpan.FromMinutes(30)).GetAwaiter().GetResult();
    }
}
