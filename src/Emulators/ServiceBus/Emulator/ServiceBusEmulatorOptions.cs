using System.Text.Json;
using System.Text.RegularExpressions;
using System.Xml;
using DroneDelivery.Emulators.ServiceBus.Faults;

namespace DroneDelivery.Emulators.ServiceBus;

/// <summary>
/// Everything the emulator can be told: where to listen, the queues (as in the official emulator's
/// Config.json), the SAS key, latencies. The config file and the command line bind to this type.
/// </summary>
public sealed record ServiceBusEmulatorOptions
{
    /// <summary>The development key of the official emulator's connection string.</summary>
    public const string DevelopmentKey = "SAS_KEY_VALUE";

    public const string DefaultKeyName = "RootManageSharedAccessKey";

    /// <summary>Address to bind; the emulator is meant for loopback.</summary>
    public string Host { get; init; } = "127.0.0.1";

    /// <summary>AMQP port; 0 picks a free port.</summary>
    public int Port { get; init; }

    /// <summary>HTTP port for /metrics, /_emulator/metrics and /health; 0 picks a free port, null disables HTTP.</summary>
    public int? HttpPort { get; init; } = 0;

    /// <summary>
    /// HTTPS port serving the same endpoints as <see cref="HttpPort"/> with a certificate made at start-up (for clients that
    /// speak nothing else: the JavaScript SDK's administration client); 0 picks a free port, null (the default) disables it.
    /// </summary>
    public int? HttpsPort { get; init; }

    public string NamespaceName { get; init; } = "sbemulatorns";

    public string SharedAccessKeyName { get; init; } = DefaultKeyName;

    public string SharedAccessKey { get; init; } = DevelopmentKey;

    public IReadOnlyList<QueueOptions> Queues { get; init; } = [];

    /// <summary>Topics with their subscriptions and rules (Config.json's <c>Topics</c>).</summary>
    public IReadOnlyList<TopicOptions> Topics { get; init; } = [];

    /// <summary>Largest message (or batch) a sender may transfer, in bytes; announced as the link's max-message-size. Default 256 KiB (Standard tier).</summary>
    public long MaxMessageSizeBytes { get; init; } = 256 * 1024;

    /// <summary>Added before a send is acknowledged. Default 0.</summary>
    public TimeSpan SendLatency { get; init; }

    /// <summary>Added between a message being locked for a receiver and its transfer. Default 0.</summary>
    public TimeSpan ReceiveLatency { get; init; }

    /// <summary>Added before a settlement (complete, abandon, dead-letter, defer) takes effect and is answered. The case study measured Complete at p50 87 ms. Default 0.</summary>
    public TimeSpan CompleteLatency { get; init; }

    /// <summary>How often expired locks and messages are swept. Default 50 ms.</summary>
    public TimeSpan SweepInterval { get; init; } = TimeSpan.FromMilliseconds(50);

    /// <summary>
    /// The clock behind locks, time-to-live, the duplicate-detection window, token expiry, the
    /// sweeps and the modelled latencies. Not a setting: tests replace it to move time themselves.
    /// </summary>
    public TimeProvider TimeProvider { get; init; } = TimeProvider.System;

    /// <summary>Seconds of per-second metric samples kept for the JSON series. Default 3600.</summary>
    public int MetricsSeriesSeconds { get; init; } = 3600;

    /// <summary>
    /// Faults injected from the start (Config.json's <c>Emulator.Faults</c>); <c>PUT /_emulator/faults</c> replaces
    /// them at run time. Default none.
    /// </summary>
    public ServiceBusFaultOptions Faults { get; init; } = ServiceBusFaultOptions.None;

    /// <summary>Throws <see cref="EmulatorConfigurationException"/> naming the first bad setting.</summary>
    public void Validate()
    {
        Require(Port is >= 0 and <= 65535, $"Port must be 0..65535 (got {Port}).");
        Require(HttpPort is null or (>= 0 and <= 65535), $"HttpPort must be 0..65535 (got {HttpPort}).");
        Require(HttpsPort is null or (>= 0 and <= 65535), $"HttpsPort must be 0..65535 (got {HttpsPort}).");
        Require(HttpsPort is null || HttpPort is not null, "HttpsPort needs the HTTP endpoint (HttpPort) on.");
        Require(!string.IsNullOrWhiteSpace(Host), "Host must not be empty.");
        Require(!string.IsNullOrWhiteSpace(SharedAccessKeyName), "SharedAccessKeyName must not be empty.");
        Require(!string.IsNullOrEmpty(SharedAccessKey), "SharedAccessKey must not be empty.");
        Require(MaxMessageSizeBytes is >= 1024 and <= 100 * 1024 * 1024, $"MaxMessageSizeBytes must be 1024..104857600 (got {MaxMessageSizeBytes}).");
        Require(SendLatency >= TimeSpan.Zero && SendLatency <= TimeSpan.FromSeconds(30), $"SendLatency must be 0..30 s (got {SendLatency}).");
        Require(ReceiveLatency >= TimeSpan.Zero && ReceiveLatency <= TimeSpan.FromSeconds(30), $"ReceiveLatency must be 0..30 s (got {ReceiveLatency}).");
        Require(CompleteLatency >= TimeSpan.Zero && CompleteLatency <= TimeSpan.FromSeconds(30), $"CompleteLatency must be 0..30 s (got {CompleteLatency}).");
        Require(SweepInterval >= TimeSpan.FromMilliseconds(5) && SweepInterval <= TimeSpan.FromSeconds(5), $"SweepInterval must be 5 ms..5 s (got {SweepInterval}).");
        Require(MetricsSeriesSeconds is >= 10 and <= 86400, $"MetricsSeriesSeconds must be 10..86400 (got {MetricsSeriesSeconds}).");
        var names = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        foreach (var queue in Queues)
        {
            queue.Validate();
            Require(names.Add(queue.Name), $"Queue '{queue.Name}' is defined twice.");
        }

        foreach (var topic in Topics)
        {
            topic.Validate();
            Require(names.Add(topic.Name), $"Topic '{topic.Name}' has the name of another queue or topic.");
        }
    }

    /// <summary>
    /// Reads a Config.json in the official emulator's shape (<c>UserConfig.Namespaces[0].Queues[]</c>, comments and
    /// trailing commas allowed) plus an optional <c>Emulator</c> section for this emulator's own settings.
    /// </summary>
    public static ServiceBusEmulatorOptions LoadConfigFile(string path, ServiceBusEmulatorOptions? defaults = null)
    {
        if (!File.Exists(path))
        {
            throw new EmulatorConfigurationException($"Config file '{path}' does not exist.");
        }

        JsonDocument document;
        try
        {
            document = JsonDocument.Parse(File.ReadAllText(path), new JsonDocumentOptions { CommentHandling = JsonCommentHandling.Skip, AllowTrailingCommas = true });
        }
        catch (JsonException e)
        {
            throw new EmulatorConfigurationException($"Config file '{path}' is not valid JSON: {e.Message}");
        }

        using (document)
        {
            return FromConfig(document.RootElement, defaults ?? new ServiceBusEmulatorOptions(), path);
        }
    }

    private static ServiceBusEmulatorOptions FromConfig(JsonElement root, ServiceBusEmulatorOptions options, string source)
    {
        if (!root.TryGetProperty("UserConfig", out var user) || user.ValueKind != JsonValueKind.Object)
        {
            throw new EmulatorConfigurationException($"{source}: missing object 'UserConfig'.");
        }

        if (!user.TryGetProperty("Namespaces", out var namespaces) || namespaces.ValueKind != JsonValueKind.Array || namespaces.GetArrayLength() != 1)
        {
            throw new EmulatorConfigurationException($"{source}: 'UserConfig.Namespaces' must be an array with exactly one namespace.");
        }

        var ns = namespaces[0];
        var nsName = OptionalString(ns, "Name", $"{source}: UserConfig.Namespaces[0]") ?? options.NamespaceName;
        var queues = new List<QueueOptions>();
        if (ns.TryGetProperty("Queues", out var queueArray))
        {
            if (queueArray.ValueKind != JsonValueKind.Array)
            {
                throw new EmulatorConfigurationException($"{source}: 'Namespaces[0].Queues' must be an array.");
            }

            var index = 0;
            foreach (var q in queueArray.EnumerateArray())
            {
                queues.Add(QueueOptions.FromConfig(q, $"{source}: Queues[{index++}]"));
            }
        }

        var topics = new List<TopicOptions>();
        if (ns.TryGetProperty("Topics", out var topicArray) && topicArray.ValueKind != JsonValueKind.Null)
        {
            if (topicArray.ValueKind != JsonValueKind.Array)
            {
                throw new EmulatorConfigurationException($"{source}: 'Namespaces[0].Topics' must be an array.");
            }

            var index = 0;
            foreach (var t in topicArray.EnumerateArray())
            {
                topics.Add(TopicOptions.FromConfig(t, $"{source}: Topics[{index++}]"));
            }
        }

        options = options with { NamespaceName = nsName, Queues = queues, Topics = topics };
        if (root.TryGetProperty("Emulator", out var emulator))
        {
            var where = $"{source}: Emulator";
            options = options with
            {
                SharedAccessKeyName = OptionalString(emulator, "SharedAccessKeyName", where) ?? options.SharedAccessKeyName,
                SharedAccessKey = OptionalString(emulator, "SharedAccessKey", where) ?? options.SharedAccessKey,
                MaxMessageSizeBytes = OptionalLong(emulator, "MaxMessageSizeBytes", where) ?? options.MaxMessageSizeBytes,
                SendLatency = OptionalMilliseconds(emulator, "SendLatencyMilliseconds", where) ?? options.SendLatency,
                ReceiveLatency = OptionalMilliseconds(emulator, "ReceiveLatencyMilliseconds", where) ?? options.ReceiveLatency,
                CompleteLatency = OptionalMilliseconds(emulator, "CompleteLatencyMilliseconds", where) ?? options.CompleteLatency,
                Faults = emulator.TryGetProperty("Faults", out var faults) && faults.ValueKind != JsonValueKind.Null
                    ? ServiceBusFaultOptions.FromJson(faults, $"{where}.Faults")
                    : options.Faults,
            };
        }

        return options;
    }

    internal static string? OptionalString(JsonElement parent, string name, string where)
    {
        if (!parent.TryGetProperty(name, out var value) || value.ValueKind == JsonValueKind.Null)
        {
            return null;
        }

        return value.ValueKind == JsonValueKind.String ? value.GetString() : throw new EmulatorConfigurationException($"{where}.{name} must be a string.");
    }

    internal static long? OptionalLong(JsonElement parent, string name, string where)
    {
        if (!parent.TryGetProperty(name, out var value) || value.ValueKind == JsonValueKind.Null)
        {
            return null;
        }

        return value.ValueKind == JsonValueKind.Number && value.TryGetInt64(out var number) ? number : throw new EmulatorConfigurationException($"{where}.{name} must be an integer.");
    }

    internal static bool? OptionalBool(JsonElement parent, string name, string where)
    {
        if (!parent.TryGetProperty(name, out var value) || value.ValueKind == JsonValueKind.Null)
        {
            return null;
        }

        return value.ValueKind switch
        {
            JsonValueKind.True => true,
            JsonValueKind.False => false,
            _ => throw new EmulatorConfigurationException($"{where}.{name} must be true or false."),
        };
    }

    internal static TimeSpan? OptionalDuration(JsonElement parent, string name, string where)
    {
        var text = OptionalString(parent, name, where);
        if (text is null)
        {
            return null;
        }

        try
        {
            return XmlConvert.ToTimeSpan(text);
        }
        catch (FormatException)
        {
            throw new EmulatorConfigurationException($"{where}.{name} must be an ISO-8601 duration such as PT1M (got '{text}').");
        }
    }

    private static TimeSpan? OptionalMilliseconds(JsonElement parent, string name, string where) =>
        OptionalLong(parent, name, where) is { } ms ? TimeSpan.FromMilliseconds(ms) : null;

    private static void Require(bool condition, string message)
    {
        if (!condition)
        {
            throw new EmulatorConfigurationException(message);
        }
    }
}

/// <summary>One queue, with the properties of the official emulator's Config.json.</summary>
public sealed partial record QueueOptions
{
    public required string Name { get; init; }

    /// <summary>How long a peek-locked message stays locked. Default 1 min; 1 s..5 min (Azure's floor is 5 s; shorter locks keep tests fast).</summary>
    public TimeSpan LockDuration { get; init; } = TimeSpan.FromMinutes(1);

    /// <summary>Deliveries after which a message is dead-lettered (MaxDeliveryCountExceeded). Default 10 (Azure's default); 1..2000.</summary>
    public int MaxDeliveryCount { get; init; } = 10;

    /// <summary>Time to live of messages that set none (a message's own TTL wins when shorter). Default 14 days.</summary>
    public TimeSpan DefaultMessageTimeToLive { get; init; } = TimeSpan.FromDays(14);

    /// <summary>Move expired messages to the dead-letter queue (TTLExpiredException) instead of dropping them.</summary>
    public bool DeadLetteringOnMessageExpiration { get; init; }

    /// <summary>Drop a message whose MessageId was seen within <see cref="DuplicateDetectionHistoryTimeWindow"/>.</summary>
    public bool RequiresDuplicateDetection { get; init; }

    public TimeSpan DuplicateDetectionHistoryTimeWindow { get; init; } = TimeSpan.FromMinutes(10);

    /// <summary>
    /// Messages are grouped by their SessionId and received through session receivers only (one at a time per session,
    /// in order, under a session lock of <see cref="LockDuration"/>); a message without a SessionId is refused.
    /// </summary>
    public bool RequiresSession { get; init; }

    /// <summary>What the entity is called in messages ("Queue", "Topic", "Subscription").</summary>
    internal string Kind { get; init; } = "Queue";

    public void Validate()
    {
        if (string.IsNullOrWhiteSpace(Name) || !EntityName().IsMatch(Name) || Name.Contains('$', StringComparison.Ordinal))
        {
            throw new EmulatorConfigurationException($"{Kind} name '{Name}' is invalid: use letters, digits, '.', '-', '_' and '/', starting and ending with a letter or digit.");
        }

        if (Kind == "Queue" && Name.Contains("/Subscriptions/", StringComparison.OrdinalIgnoreCase))
        {
            throw new EmulatorConfigurationException($"Queue name '{Name}' is invalid: '/Subscriptions/' is reserved for subscription paths.");
        }

        if (LockDuration < TimeSpan.FromSeconds(1) || LockDuration > TimeSpan.FromMinutes(5))
        {
            throw new EmulatorConfigurationException($"{Kind} '{Name}': LockDuration must be 1 s..5 min (got {LockDuration}).");
        }

        if (MaxDeliveryCount is < 1 or > 2000)
        {
            throw new EmulatorConfigurationException($"{Kind} '{Name}': MaxDeliveryCount must be 1..2000 (got {MaxDeliveryCount}).");
        }

        if (DefaultMessageTimeToLive < TimeSpan.FromSeconds(1))
        {
            throw new EmulatorConfigurationException($"{Kind} '{Name}': DefaultMessageTimeToLive must be at least 1 s (got {DefaultMessageTimeToLive}).");
        }

        if (DuplicateDetectionHistoryTimeWindow < TimeSpan.FromSeconds(1) || DuplicateDetectionHistoryTimeWindow > TimeSpan.FromDays(7))
        {
            throw new EmulatorConfigurationException($"{Kind} '{Name}': DuplicateDetectionHistoryTimeWindow must be 1 s..7 days (got {DuplicateDetectionHistoryTimeWindow}).");
        }
    }

    internal static QueueOptions FromConfig(JsonElement queue, string where)
    {
        var name = ServiceBusEmulatorOptions.OptionalString(queue, "Name", where) ?? throw new EmulatorConfigurationException($"{where}: missing 'Name'.");
        var options = new QueueOptions { Name = name };
        if (!queue.TryGetProperty("Properties", out var p))
        {
            return options;
        }

        where = $"{where} ('{name}').Properties";
        foreach (var forward in new[] { "ForwardTo", "ForwardDeadLetteredMessagesTo" })
        {
            if (!string.IsNullOrEmpty(ServiceBusEmulatorOptions.OptionalString(p, forward, where)))
            {
                throw new EmulatorConfigurationException($"{where}.{forward}: auto-forwarding is not supported by this emulator.");
            }
        }

        var maxDelivery = ServiceBusEmulatorOptions.OptionalLong(p, "MaxDeliveryCount", where);
        return options with
        {
            LockDuration = ServiceBusEmulatorOptions.OptionalDuration(p, "LockDuration", where) ?? options.LockDuration,
            MaxDeliveryCount = maxDelivery is { } m ? (int)Math.Clamp(m, int.MinValue, int.MaxValue) : options.MaxDeliveryCount,
            DefaultMessageTimeToLive = ServiceBusEmulatorOptions.OptionalDuration(p, "DefaultMessageTimeToLive", where) ?? options.DefaultMessageTimeToLive,
            DeadLetteringOnMessageExpiration = ServiceBusEmulatorOptions.OptionalBool(p, "DeadLetteringOnMessageExpiration", where) ?? false,
            RequiresDuplicateDetection = ServiceBusEmulatorOptions.OptionalBool(p, "RequiresDuplicateDetection", where) ?? false,
            DuplicateDetectionHistoryTimeWindow = ServiceBusEmulatorOptions.OptionalDuration(p, "DuplicateDetectionHistoryTimeWindow", where) ?? options.DuplicateDetectionHistoryTimeWindow,
            RequiresSession = ServiceBusEmulatorOptions.OptionalBool(p, "RequiresSession", where) ?? false,
        };
    }

    [GeneratedRegex(@"^[A-Za-z0-9]([\w\-./]*[A-Za-z0-9])?$")]
    private static partial Regex EntityName();
}

/// <summary>A bad setting or Config.json entry; the message names it.</summary>
public sealed class EmulatorConfigurationException(string message) : Exception(message);
