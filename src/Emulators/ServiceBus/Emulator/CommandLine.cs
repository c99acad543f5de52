using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;

namespace DroneDelivery.Emulators.ServiceBus;

/// <summary>
/// <c>--port &lt;amqp port&gt; [--http-port &lt;port|off&gt;] [--https-port &lt;port|off&gt;] [--config &lt;Config.json&gt;] [--host &lt;address&gt;]
/// [--send-latency-ms N] [--receive-latency-ms N] [--complete-latency-ms N]</c>, bound onto <see cref="ServiceBusEmulatorOptions"/>:
/// the config file first, the other options over it. Exit codes: 0 after a clean shutdown or <c>--help</c>, 2 for arguments or a
/// configuration it refuses, or an address it cannot listen on.
/// </summary>
internal static class CommandLine
{
    public const int InvalidConfigurationExitCode = 2;

    private static readonly Option<int?> Port = new("--port") { Description = "The AMQP port (0: any free port).", CustomParser = Integer };

    private static readonly Option<string> HttpPort = new("--http-port") { Description = "The HTTP port of /metrics, health and the administration API, or off.", Validators = { PortOrOff } };

    private static readonly Option<string> HttpsPort = new("--https-port") { Description = "The HTTPS port of the administration API, or off.", Validators = { PortOrOff } };

    private static readonly Option<string?> Config = new("--config") { Description = "The queues and topics, in the official emulator's Config.json format." };

    private static readonly Option<string?> Host = new("--host") { Description = "The address to listen on, e.g. 127.0.0.1 or 0.0.0.0." };

    private static readonly Option<int?> SendLatency = new("--send-latency-ms") { Description = "Milliseconds each send waits, the service's round trip.", CustomParser = Integer };

    private static readonly Option<int?> ReceiveLatency = new("--receive-latency-ms") { Description = "Milliseconds each delivery waits.", CustomParser = Integer };

    private static readonly Option<int?> CompleteLatency = new("--complete-latency-ms") { Description = "Milliseconds each settlement waits.", CustomParser = Integer };

    /// <summary>The command: its options, and <c>--help</c>.</summary>
    public static RootCommand Build() =>
        new("A local stand-in for Azure Service Bus: AMQP 1.0 as Service Bus speaks it, queues and topics from a Config.json, metrics over HTTP.")
        {
            Port, HttpPort, HttpsPort, Config, Host, SendLatency, ReceiveLatency, CompleteLatency,
        };

    /// <summary>The options the arguments describe; throws <see cref="EmulatorConfigurationException"/> naming what is wrong.</summary>
    public static ServiceBusEmulatorOptions Parse(string[] args) => Options(Build().Parse(args));

    /// <summary>The options a parse describes; throws <see cref="EmulatorConfigurationException"/> naming what is wrong.</summary>
    public static ServiceBusEmulatorOptions Options(ParseResult parse)
    {
        if (Error(parse) is { } error)
        {
            throw new EmulatorConfigurationException(error);
        }

        var options = new ServiceBusEmulatorOptions();
        if (parse.GetValue(Config) is { } config)
        {
            options = ServiceBusEmulatorOptions.LoadConfigFile(config, options);
        }

        if (Given(parse, Port))
        {
            options = options with { Port = parse.GetValue(Port)!.Value };
        }

        if (Given(parse, HttpPort))
        {
            options = options with { HttpPort = PortOrNull(parse.GetValue(HttpPort)!) };
        }

        if (Given(parse, HttpsPort))
        {
            options = options with { HttpsPort = PortOrNull(parse.GetValue(HttpsPort)!) };
        }

        if (parse.GetValue(Host) is { } host)
        {
            options = options with { Host = host };
        }

        if (parse.GetValue(SendLatency) is { } send)
        {
            options = options with { SendLatency = TimeSpan.FromMilliseconds(send) };
        }

        if (parse.GetValue(ReceiveLatency) is { } receive)
        {
            options = options with { ReceiveLatency = TimeSpan.FromMilliseconds(receive) };
        }

        if (parse.GetValue(CompleteLatency) is { } complete)
        {
            options = options with { CompleteLatency = TimeSpan.FromMilliseconds(complete) };
        }

        options.Validate();
        return options;
    }

    /// <summary>What is wrong with the arguments, in one line naming the option; null when nothing is.</summary>
    public static string? Error(ParseResult parse)
    {
        if (parse.UnmatchedTokens.FirstOrDefault(t => t.StartsWith('-')) is { } unknown)
        {
            return $"Unknown option '{unknown}'. Known: --port, --http-port, --https-port, --config, --host, --send-latency-ms, --receive-latency-ms, --complete-latency-ms.";
        }

        return parse.Errors.Count == 0 ? null : string.Join(" ", parse.Errors.Select(e => e.Message));
    }

    private static bool Given(ParseResult parse, Option option) => parse.GetResult(option) is { Implicit: false };

    private static int? Integer(ArgumentResult result)
    {
        var token = result.Tokens[^1].Value;
        if (int.TryParse(token, NumberStyles.Integer, CultureInfo.InvariantCulture, out var number))
        {
            return number;
        }

        result.AddError($"{Name(result)} must be an integer (got '{token}').");
        return null;
    }

    /// <summary>"off" (no such endpoint) or an integer; the value is read by <see cref="PortOrNull"/>.</summary>
    private static void PortOrOff(OptionResult result)
    {
        if (result.Tokens.Count > 0 && result.Tokens[^1].Value is var token && token != "off" && !int.TryParse(token, NumberStyles.Integer, CultureInfo.InvariantCulture, out _))
        {
            result.AddError($"{result.Option.Name} must be an integer or off (got '{token}').");
        }
    }

    private static int? PortOrNull(string value) => value == "off" ? null : int.Parse(value, NumberStyles.Integer, CultureInfo.InvariantCulture);

    private static string Name(ArgumentResult result) => (result.Parent as OptionResult)?.Option.Name ?? "the value";
}
