using System.Globalization;
using DroneDelivery.Lab.Tests;

/// <summary>
/// Runs <see cref="BusyForProfiling"/> in place of the test assembly's entry point when the runtime was told to call
/// this hook (<see cref="BusyForProfiling.StartupHookVariable"/>) and the first argument asks for it; returns at once
/// otherwise, and then the entry point runs as usual. The runtime looks for this type by name, outside any namespace.
/// </summary>
#pragma warning disable CA1050 // The runtime finds a startup hook only in the global namespace.
internal static class StartupHook
#pragma warning restore CA1050
{
    public static void Initialize()
    {
        if (Environment.GetCommandLineArgs() is [_, BusyForProfiling.Command, var waitingThreads, var share])
        {
            Environment.Exit(BusyForProfiling.Run(int.Parse(waitingThreads, CultureInfo.InvariantCulture), double.Parse(share, CultureInfo.InvariantCulture)));
        }
    }
}
