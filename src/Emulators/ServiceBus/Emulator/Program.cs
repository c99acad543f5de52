using System.Runtime.InteropServices;
using DroneDelivery.Emulators.ServiceBus;

// dotnet run --project src/Emulators/ServiceBus/Emulator -- --port <amqp port> --http-port <metrics port> --config <Config.json>
//   [--https-port <port>] [--host 127.0.0.1] [--send-latency-ms N] [--receive-latency-ms N] [--complete-latency-ms N]
// Prints one line starting with ServiceBusEmulator.ReadyLinePrefix when it is ready; stops on Ctrl+C / SIGTERM.
var parse = CommandLine.Build().Parse(args);
if (CommandLine.Error(parse) is null && parse.Action is not null)
{
    return await parse.InvokeAsync(); // --help
}

ServiceBusEmulatorOptions options;
try
{
    options = CommandLine.Options(parse);
}
catch (EmulatorConfigurationException e)
{
    Console.Error.WriteLine("Service Bus emulator: invalid configuration: " + e.Message);
    return CommandLine.InvalidConfigurationExitCode;
}

await using var emulator = await StartOrReportAsync(options);
if (emulator is null)
{
    return CommandLine.InvalidConfigurationExitCode;
}

emulator.ConnectionFailed += line => Console.Error.WriteLine("Service Bus emulator: " + line);
Console.WriteLine(emulator.ReadyLine);
Console.WriteLine($"Connection string: {emulator.ConnectionString}");
if (emulator.AdministrationConnectionString is { } administration)
{
    Console.WriteLine($"Administration connection string: {administration}");
}

using var stop = new CancellationTokenSource();

// Ctrl+C and SIGTERM (Kubernetes, the lab) end the wait below; the emulator is then disposed and the
// program returns 0, instead of the runtime ending the process from its signal handler.
using var interrupt = PosixSignalRegistration.Create(PosixSignal.SIGINT, Stop);
using var terminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, Stop);
try
{
    await Task.Delay(Timeout.Infinite, stop.Token);
}
catch (OperationCanceledException)
{
}

return 0;

void Stop(PosixSignalContext context)
{
    context.Cancel = true;
    stop.Cancel();
}

static async Task<ServiceBusEmulator?> StartOrReportAsync(ServiceBusEmulatorOptions options)
{
    try
    {
        return await ServiceBusEmulator.StartAsync(options);
    }
    catch (EmulatorConfigurationException e)
    {
        Console.Error.WriteLine("Service Bus emulator: invalid configuration: " + e.Message);
    }
    catch (System.Net.Sockets.SocketException e)
    {
        Console.Error.WriteLine($"Service Bus emulator: cannot listen on {options.Host}:{options.Port}/{options.HttpPort}: {e.Message}");
    }
    catch (IOException e)
    {
        Console.Error.WriteLine($"Service Bus emulator: cannot start the HTTP endpoint on port {options.HttpPort}: {e.Message}");
    }

    return null;
}
