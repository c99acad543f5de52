using System.Text.Json;

namespace DroneDelivery.Emulators.CosmosDb.Configuration;

/// <summary>A setting the emulator cannot start with; the message names the setting and the fix.</summary>
public sealed class CosmosEmulatorConfigurationException(string message) : Exception(message);

/// <summary>Rejects bad settings at start-up so that a typo fails fast instead of misbehaving under load.</summary>
public static class CosmosEmulatorOptionsValidator
{
    private static readonly string[] ConsistencyLevels = ["Strong", "BoundedStaleness", "Session", "ConsistentPrefix", "Eventual"];

    public static void Validate(CosmosEmulatorOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        Require(options.Port is >= 0 and <= 65535, $"Port must be between 0 and 65535 (was {options.Port}).");
        Require(ListenAddress(options.Host) is not null, $"Host must be an IP address such as 127.0.0.1 or 0.0.0.0, or localhost (was '{options.Host}').");
        Require(IsBase64Key(options.AccountKey), "AccountKey must be a non-empty base64 string.");
        Require(ConsistencyLevels.Contains(options.DefaultConsistencyLevel, StringComparer.Ordinal),
            $"DefaultConsistencyLevel must be one of {string.Join(", ", ConsistencyLevels)} (was '{options.DefaultConsistencyLevel}').");
        Require(options.DefaultThroughput > 0, $"DefaultThroughput must be a positive number of RU/s (was {options.DefaultThroughput}).");
        RequirePartitions(options.DefaultPhysicalPartitions, "DefaultPhysicalPartitions");
        Require(options.MaxThroughputPerPartition > 0, $"MaxThroughputPerPartition must be positive (was {options.MaxThroughputPerPartition}).");
        Require(double.IsFinite(options.BurstSeconds) && options.BurstSeconds > 0, $"BurstSeconds must be positive (was {options.BurstSeconds}).");
        Require(options.RequestLogCapacity > 0, $"RequestLogCapacity must be positive (was {options.RequestLogCapacity}).");
        Require(options.MetricsHistorySeconds is > 0 and <= 86_400, $"MetricsHistorySeconds must be between 1 and 86400 (was {options.MetricsHistorySeconds}).");
        ValidateLatency(options.Latency, "Latency");
        ValidateCharges(options.RequestCharges, "RequestCharges");
        Require(options.Faults is not null, "Faults must be an object (or left out).");
        var faults = options.Faults!.Problem("Faults");
        Require(faults is null, faults!);

        var databaseIds = new HashSet<string>(StringComparer.Ordinal);
        for (var d = 0; d < options.Databases.Count; d++)
        {
            var database = options.Databases[d];
            var where = $"Databases[{d}]";
            Require(database is not null, $"{where} is null.");
            ValidateId(database!.Id, $"{where}.Id");
            Require(databaseIds.Add(database.Id), $"{where}.Id '{database.Id}' is declared twice.");
            Require(database.Throughput is null or > 0, $"{where}.Throughput must be a positive number of RU/s (was {database.Throughput}).");
            RequirePartitions(database.PhysicalPartitions, $"{where}.PhysicalPartitions");
            Require(database.PhysicalPartitions is null || database.Throughput is not null,
                $"{where}.PhysicalPartitions is set but {where}.Throughput (shared throughput) is not.");

            var containerIds = new HashSet<string>(StringComparer.Ordinal);
            for (var c = 0; c < database.Containers.Count; c++)
            {
                var container = database.Containers[c];
                var at = $"{where}.Containers[{c}]";
                Require(container is not null, $"{at} is null.");
                ValidateId(container!.Id, $"{at}.Id");
                Require(containerIds.Add(container.Id), $"{at}.Id '{container.Id}' is declared twice in database '{database.Id}'.");
                Require(IsPartitionKeyPath(container.PartitionKeyPath),
                    $"{at}.PartitionKeyPath must be a path such as /ownerId (was '{container.PartitionKeyPath}').");
                Require(container.PartitionKeyVersion is 1 or 2, $"{at}.PartitionKeyVersion must be 1 or 2 (was {container.PartitionKeyVersion}).");
                Require(container.Throughput is null or > 0, $"{at}.Throughput must be a positive number of RU/s (was {container.Throughput}).");
                RequirePartitions(container.PhysicalPartitions, $"{at}.PhysicalPartitions");
                Require(container.PhysicalPartitions is null || container.Throughput is not null || database.Throughput is null,
                    $"{at}.PhysicalPartitions cannot be set on a container that shares its database's throughput; set {where}.PhysicalPartitions.");
                if (container.Latency is not null)
                {
                    ValidateLatency(container.Latency, $"{at}.Latency");
                }

                if (container.RequestCharges is not null)
                {
                    ValidateCharges(container.RequestCharges, $"{at}.RequestCharges");
                }
            }
        }
    }

    /// <summary>Reads a JSON config file (comments and trailing commas allowed, unknown settings rejected).</summary>
    public static CosmosEmulatorOptions Load(string path)
    {
        string json;
        try
        {
            json = File.ReadAllText(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw new CosmosEmulatorConfigurationException($"Cannot read the config file '{path}': {e.Message}");
        }

        try
        {
            var options = JsonSerializer.Deserialize<CosmosEmulatorOptions>(json, new JsonSerializerOptions
            {
                PropertyNameCaseInsensitive = true,
                ReadCommentHandling = JsonCommentHandling.Skip,
                AllowTrailingCommas = true,
                UnmappedMemberHandling = System.Text.Json.Serialization.JsonUnmappedMemberHandling.Disallow,
            });
            return options ?? throw new CosmosEmulatorConfigurationException($"The config file '{path}' is empty (null).");
        }
        catch (JsonException e)
        {
            throw new CosmosEmulatorConfigurationException($"The config file '{path}' is not valid: {e.Message}");
        }
    }

    /// <summary>The address a Host setting names, or null when it names none.</summary>
    internal static System.Net.IPAddress? ListenAddress(string? host) =>
        string.Equals(host, "localhost", StringComparison.OrdinalIgnoreCase) ? System.Net.IPAddress.Loopback
        : System.Net.IPAddress.TryParse(host, out var address) ? address
        : null;

    internal static bool IsPartitionKeyPath(string? path) =>
        !string.IsNullOrEmpty(path) && path[0] == '/' && path.Split('/').Skip(1).All(s => s.Length > 0);

    internal static string? IdError(string? id)
    {
        if (string.IsNullOrEmpty(id))
        {
            return "must not be empty";
        }

        if (id.Length > 255)
        {
            return "must be at most 255 characters";
        }

        if (id.IndexOfAny(['/', '\\', '?', '#']) >= 0)
        {
            return "must not contain '/', '\\', '?' or '#'";
        }

        return id.EndsWith(' ') ? "must not end with a space" : null;
    }

    private static void ValidateId(string id, string name)
    {
        var error = IdError(id);
        Require(error is null, $"{name} {error} (was '{id}').");
    }

    private static void ValidateLatency(LatencyOptions latency, string name)
    {
        var problem = LatencyProblem(latency, name);
        Require(problem is null, problem!);
    }

    /// <summary>What is wrong with a latency model (at start-up or in <c>PUT /_emulator/latency</c>); null when nothing is.</summary>
    public static string? LatencyProblem(LatencyOptions? latency, string name)
    {
        if (latency is null)
        {
            return $"{name} is null.";
        }

        foreach (var (property, value) in new[]
        {
            ("FixedMilliseconds", latency.FixedMilliseconds),
            ("ExponentialMeanMilliseconds", latency.ExponentialMeanMilliseconds),
            ("PerDocumentMilliseconds", latency.PerDocumentMilliseconds),
            ("ThrottledMilliseconds", latency.ThrottledMilliseconds),
        })
        {
            if (!IsNonNegative(value) || value > MaxLatencyMilliseconds)
            {
                return $"{name}.{property} must be between 0 and {MaxLatencyMilliseconds} milliseconds (was {value}).";
            }
        }

        return null;
    }

    /// <summary>A minute: longer than any client waits for one request.</summary>
    private const double MaxLatencyMilliseconds = 60_000;

    private static void ValidateCharges(RequestChargeOptions charges, string name)
    {
        Require(charges is not null, $"{name} is null.");
        Require(IsNonNegative(charges!.PointReadPerKilobyte), $"{name}.PointReadPerKilobyte must be zero or more (was {charges.PointReadPerKilobyte}).");
        Require(IsNonNegative(charges.WritePerKilobyte), $"{name}.WritePerKilobyte must be zero or more (was {charges.WritePerKilobyte}).");
        Require(IsNonNegative(charges.QueryPerPartition), $"{name}.QueryPerPartition must be zero or more (was {charges.QueryPerPartition}).");
        Require(IsNonNegative(charges.QueryPerDocument), $"{name}.QueryPerDocument must be zero or more (was {charges.QueryPerDocument}).");
    }

    private static void RequirePartitions(int? partitions, string name) =>
        Require(partitions is null or (>= 1 and <= 1024), $"{name} must be between 1 and 1024 (was {partitions}).");

    private static bool IsNonNegative(double value) => double.IsFinite(value) && value >= 0;

    private static bool IsBase64Key(string? key)
    {
        if (string.IsNullOrEmpty(key))
        {
            return false;
        }

        Span<byte> buffer = stackalloc byte[key.Length];
        return Convert.TryFromBase64String(key, buffer, out var written) && written > 0;
    }

    private static void Require(bool condition, string message)
    {
        if (!condition)
        {
            throw new CosmosEmulatorConfigurationException(message);
        }
    }
}
