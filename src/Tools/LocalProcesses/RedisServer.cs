namespace DroneDelivery.LocalProcesses;

/// <summary>How to run a local redis-server.</summary>
public sealed record RedisServerOptions
{
    /// <summary>0 picks a free loopback port.</summary>
    public int Port { get; init; }

    /// <summary>Redis <c>maxmemory</c>, e.g. <c>64mb</c>; null leaves it unlimited.</summary>
    public string? MaxMemory { get; init; }

    /// <summary>Redis <c>maxmemory-policy</c>; <c>noeviction</c> makes a full cache refuse writes with an OOM error.</summary>
    public string MaxMemoryPolicy { get; init; } = "noeviction";

    public string? LogFile { get; init; }

    /// <summary>
    /// When set, redis-server keeps an append-only file in this directory and loads it on start, so a
    /// server killed and started again on the same port keeps every write it acknowledged. Null: no persistence.
    /// </summary>
    public string? DataDirectory { get; init; }
}

/// <summary>
/// A real redis-server on 127.0.0.1 with persistence off. The binary comes from <c>REDIS_SERVER</c>
/// or PATH (Debian: <c>apt-get install -y redis-server</c>).
/// </summary>
public sealed class RedisServer : IAsyncDisposable
{
    private readonly LocalProcess _process;

    private RedisServer(LocalProcess process, int port)
    {
        _process = process;
        Port = port;
    }

    public int Port { get; }

    /// <summary>A StackExchange.Redis configuration string for this server.</summary>
    public string ConnectionString => $"127.0.0.1:{Port},abortConnect=false";

    public static string FindExecutable()
    {
        var configured = Environment.GetEnvironmentVariable("REDIS_SERVER");
        if (!string.IsNullOrEmpty(configured))
        {
            return File.Exists(configured)
                ? configured
                : throw new FileNotFoundException($"REDIS_SERVER points at '{configured}', which does not exist.");
        }

        foreach (var dir in (Environment.GetEnvironmentVariable("PATH") ?? "").Split(':', StringSplitOptions.RemoveEmptyEntries)
                     .Concat(["/usr/bin", "/usr/sbin", "/usr/local/bin"]))
        {
            var candidate = Path.Combine(dir, "redis-server");
            if (File.Exists(candidate))
            {
                return candidate;
            }
        }

        throw new FileNotFoundException(
            "redis-server was not found on PATH. Install it (Debian: apt-get install -y redis-server) or set REDIS_SERVER.");
    }

    public static async Task<RedisServer> StartAsync(RedisServerOptions options, CancellationToken cancellationToken = default)
    {
        var port = options.Port == 0 ? FreePort.Next() : options.Port;
        List<string> args =
        [
            "--port", port.ToString(System.Globalization.CultureInfo.InvariantCulture),
            "--bind", "127.0.0.1",
            "--save", "",
            "--daemonize", "no",
            "--maxmemory-policy", options.MaxMemoryPolicy,
        ];
        if (options.DataDirectory is null)
        {
            args.AddRange(["--appendonly", "no"]);
        }
        else
        {
            // Each write reaches the file before its answer is sent, so a kill -9 loses nothing acknowledged.
            Directory.CreateDirectory(options.DataDirectory);
            args.AddRange(["--dir", options.DataDirectory, "--appendonly", "yes", "--appendfsync", "everysec"]);
        }
        if (options.MaxMemory is not null)
        {
            args.AddRange(["--maxmemory", options.MaxMemory]);
        }

        var process = await LocalProcess.StartAsync(
            new LocalProcessSpec
            {
                Name = $"redis-{port}",
                FileName = FindExecutable(),
                Arguments = args,
                IsReadyLine = line => line.Contains("Ready to accept connections", StringComparison.Ordinal),
                ReadyTimeout = TimeSpan.FromSeconds(20),
                LogFile = options.LogFile,
            },
            cancellationToken).ConfigureAwait(false);
        return new RedisServer(process, port);
    }

    /// <summary>The redis-server process (for CPU and memory sampling).</summary>
    public LocalProcess Process => _process;

    public ValueTask DisposeAsync() => _process.DisposeAsync();
}
