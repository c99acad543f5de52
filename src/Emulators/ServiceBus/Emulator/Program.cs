using System.Runtime.InteropServices;
using System.Globalization;
using DroneDelivery.Emulators.ServiceBus;

// dotnet run --project src/Emulators/ServiceBus/Emulator -- --port <amqp port> --http-port <metrics port> --config <Config.json>
//   [--https-port <port>] [--host 127.0.0.1] [--send-latency-ms N] [--receive-latency-ms N] [--complete-latency-ms N]
// Prints one line starting with ServiceBusEmulator.ReadyLinePrefix when it is ready; stops on Ctrl+C / SIGTERM.
ServiceBusEmulatorOptions options;
try
{
    options = CommandLine.Parse(args);
}
catch (EmulatorConfigurationException e)
{
    Console.Error.WriteLine("Service Bus emulator: invalid configuration: " + e.Message);
    return 2;
}

await using var emulator = await StartOrReportAsync(options);
if (emulator is null)
{
    return 2;
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

/// <summary>The command line: <c>--name value</c> pairs, bound onto <see cref="ServiceBusEmulatorOptions"/>.</summary>
internal static class CommandLine
{
    public static ServiceBusEmulatorOptions Parse(string[] args)
    {
        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        for (var i = 0; i < args.Length; i++)
        {
            if (!args[i].StartsWith("--", StringComparison.Ordinal) || i + 1 >= args.Length)
            {
                throw new EmulatorConfigurationException($"Expected '--name value' pairs; '{args[i]}' has no value.");
            }

            values[args[i][2..]] = args[++i];
        }

        var options = new ServiceBusEmulatorOptions();
        if (values.Remove("config", out var config))
        {
            options = ServiceBusEmulatorOptions.LoadConfigFile(config, options);
        }

        foreach (var (name, value) in values)
        {
            options = name switch
            {
                "port" => options with { Port = Int(name, value) },
                "http-port" => options with { HttpPort = value == "off" ? null : Int(name, value) },
                "https-port" => options with { HttpsPort = value == "off" ? null : Int(name, value) },
                "host" => options with { Host = value },
                "send-latency-ms" => options with { SendLatency = TimeSpan.FromMilliseconds(Int(name, value)) },
                "receive-latency-ms" => options with { ReceiveLatency = TimeSpan.FromMilliseconds(Int(name, value)) },
                "complete-latency-ms" => options with { CompleteLatency = TimeSpan.FromMilliseconds(Int(name, value)) },
                _ => throw new EmulatorConfigurationException($"Unknown option '--{name}'. Known: --port, --http-port, --https-port, --config, --host, --send-latency-ms, --receive-latency-ms, --complete-latency-ms."),
            };
        }

        options.Validate();
        return options;
    }

    private static int Int(string name, string value) =>
        int.TryParse(value, NumberStyles.Integer, CultureInfo.InvariantCulture, out var number)
            ? number
            : throw new EmulatorConfigurationException($"--{name} must be an integer (got '{value}').");
}
