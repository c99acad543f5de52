using System.Globalization;
using DroneDelivery.Emulators.CosmosDb.Configuration;

namespace DroneDelivery.Emulators.CosmosDb;

/// <summary>
/// <c>--port &lt;port&gt; [--host &lt;address&gt;] [--config &lt;file.json&gt;] [--https]</c>: the start-up contract other tools rely on.
/// </summary>
internal static class CommandLine
{
    public const string Usage = "Usage: DroneDelivery.Emulators.CosmosDb --port <port> [--host <address>] [--config <file.json>] [--https]";

    /// <summary>The options the arguments describe; throws with a clear message for anything it does not understand.</summary>
    public static CosmosEmulatorOptions Parse(IReadOnlyList<string> args)
    {
        int? port = null;
        string? host = null;
        string? config = null;
        var https = false;
        for (var i = 0; i < args.Count; i++)
        {
            switch (args[i])
            {
                case "--port":
                    var value = Value(args, ref i);
                    if (!int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out var parsed) || parsed > 65535)
                    {
                        throw new CosmosEmulatorConfigurationException($"--port must be a port number between 0 and 65535 (was '{value}').");
                    }

                    port = parsed;
                    break;
                case "--host":
                    host = Value(args, ref i);
                    if (CosmosEmulatorOptionsValidator.ListenAddress(host) is null)
                    {
                        throw new CosmosEmulatorConfigurationException($"--host must be an IP address such as 127.0.0.1 or 0.0.0.0, or localhost (was '{host}').");
                    }

                    break;
                case "--config":
                    config = Value(args, ref i);
                    break;
                case "--https":
                    https = true;
                    break;
                default:
                    throw new CosmosEmulatorConfigurationException($"Unknown option '{args[i]}'. {Usage}");
            }
        }

        var options = config is null ? new CosmosEmulatorOptions() : CosmosEmulatorOptionsValidator.Load(config);
        if (port is not null)
        {
            options.Port = port.Value;
        }
        else if (config is null)
        {
            options.Port = 8081;
        }

        options.Host = host ?? options.Host;
        options.Https |= https;
        return options;
    }

    private static string Value(IReadOnlyList<string> args, ref int i)
    {
        if (i + 1 >= args.Count || args[i + 1].StartsWith("--", StringComparison.Ordinal))
        {
            throw new CosmosEmulatorConfigurationException($"{args[i]} needs a value. {Usage}");
        }

        return args[++i];
    }
}
