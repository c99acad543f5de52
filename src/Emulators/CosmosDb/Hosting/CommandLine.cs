using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using DroneDelivery.Emulators.CosmosDb.Configuration;

namespace DroneDelivery.Emulators.CosmosDb;

/// <summary>
/// <c>--port &lt;port&gt; [--host &lt;address&gt;] [--config &lt;file.json&gt;] [--https]</c>: the start-up contract other tools rely on.
/// Exit codes: 0 after a clean shutdown or <c>--help</c>, 2 for arguments or a configuration it refuses, 3 when it cannot listen.
/// </summary>
internal static class CommandLine
{
    public const int InvalidConfigurationExitCode = 2;
    public const int CannotListenExitCode = 3;

    public const string Usage = "Usage: DroneDelivery.Emulators.CosmosDb --port <port> [--host <address>] [--config <file.json>] [--https]";

    private static readonly Option<int?> Port = new("--port")
    {
        Description = "The port to listen on (0: any free port); default 8081, or the config file's Port.",
        CustomParser = ParsePort,
    };

    private static readonly Option<string?> Host = new("--host")
    {
        Description = "The address to listen on: an IP address such as 127.0.0.1 or 0.0.0.0, or localhost.",
        Validators =
        {
            result =>
            {
                if (result.GetValueOrDefault<string?>() is { } host && CosmosEmulatorOptionsValidator.ListenAddress(host) is null)
                {
                    result.AddError($"--host must be an IP address such as 127.0.0.1 or 0.0.0.0, or localhost (was '{host}').");
                }
            },
        },
    };

    private static readonly Option<string?> Config = new("--config") { Description = "A JSON file of databases, containers and the capacity model (docs/emulators/cosmos-db.md)." };

    private static readonly Option<bool> Https = new("--https") { Description = "Serve HTTPS with a self-signed certificate instead of HTTP." };

    /// <summary>The command: its options, and <c>--help</c>.</summary>
    public static RootCommand Build() => new("A local stand-in for Azure Cosmos DB (NoSQL API, gateway mode).") { Port, Host, Config, Https };

    /// <summary>The options the arguments describe; throws with a clear message for anything it does not understand.</summary>
    public static CosmosEmulatorOptions Parse(IReadOnlyList<string> args) => Options(Build().Parse(args));

    /// <summary>The options a parse describes; throws with a clear message for a parse error or a bad config file.</summary>
    public static CosmosEmulatorOptions Options(ParseResult parse)
    {
        if (Error(parse) is { } error)
        {
            throw new CosmosEmulatorConfigurationException(error);
        }

        var config = parse.GetValue(Config);
        var options = config is null ? new CosmosEmulatorOptions() : CosmosEmulatorOptionsValidator.Load(config);
        if (parse.GetValue(Port) is { } port)
        {
            options.Port = port;
        }
        else if (config is null)
        {
            options.Port = 8081;
        }

        options.Host = parse.GetValue(Host) ?? options.Host;
        options.Https |= parse.GetValue(Https);
        return options;
    }

    /// <summary>What is wrong with the arguments, in one line naming the option; null when nothing is.</summary>
    public static string? Error(ParseResult parse)
    {
        if (parse.UnmatchedTokens.FirstOrDefault(t => t.StartsWith('-')) is { } unknown)
        {
            return $"Unknown option '{unknown}'. {Usage}";
        }

        return parse.Errors.Count == 0 ? null : $"{string.Join(" ", parse.Errors.Select(e => e.Message))} {Usage}";
    }

    private static int? ParsePort(ArgumentResult result)
    {
        var token = result.Tokens[^1].Value;
        if (int.TryParse(token, NumberStyles.None, CultureInfo.InvariantCulture, out var port) && port <= 65535)
        {
            return port;
        }

        result.AddError($"--port must be a port number between 0 and 65535 (was '{token}').");
        return null;
    }
}
