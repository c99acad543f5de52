using System.Runtime.InteropServices;
using DroneDelivery.LoadDriver.Cli;

// Ctrl+C or SIGTERM stops the run and still writes what was measured; a second signal ends the process at once.
using var stop = new CancellationTokenSource();
void OnSignal(PosixSignalContext context)
{
    context.Cancel = !stop.IsCancellationRequested;
    stop.Cancel();
}

using var interrupt = PosixSignalRegistration.Create(PosixSignal.SIGINT, OnSignal);
using var terminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, OnSignal);
return await LoadDriverCommand.RunAsync(args, new CliConsole(Console.Out, Console.Error, IsTerminal: !Console.IsOutputRedirected), stop.Token);
