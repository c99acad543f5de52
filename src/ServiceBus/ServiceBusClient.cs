using Azure.Core;
using DroneDelivery.ServiceBus.Transport;

namespace DroneDelivery.ServiceBus;

/// <summary>
/// The entry point (the SDK's shape): one AMQP connection per client, shared by the senders, receivers and
/// processors it creates. A connection string with <c>UseDevelopmentEmulator=true</c> means plain AMQP on the
/// endpoint's host and port; otherwise amqps on 5671.
/// </summary>
public class ServiceBusClient : IAsyncDisposable
{
    private readonly List<IAsyncDisposable> _children = [];
    private readonly Lock _sync = new();

    public ServiceBusClient(string connectionString)
        : this(connectionString, new ServiceBusClientOptions())
    {
    }

    public ServiceBusClient(string connectionString, ServiceBusClientOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var properties = ServiceBusConnectionStringProperties.Parse(connectionString);
        ServiceBusCredential credential = properties.SharedAccessSignature is { } signature
            ? new ServiceBusCredential.Signature(signature)
            : new ServiceBusCredential.SharedKey(properties.SharedAccessKeyName!, properties.SharedAccessKey!);
        Scope = new ConnectionScope(properties.Endpoint, credential, options, properties.UseDevelopmentEmulator);
        ConnectionEntityPath = properties.EntityPath;
        Identifier = options.Identifier ?? $"{properties.FullyQualifiedNamespace}-{Guid.NewGuid()}";
        TransportType = options.TransportType;
    }

    /// <summary>Microsoft Entra ID: <paramref name="fullyQualifiedNamespace"/> such as <c>contoso.servicebus.windows.net</c>.</summary>
    public ServiceBusClient(string fullyQualifiedNamespace, TokenCredential credential)
        : this(fullyQualifiedNamespace, credential, new ServiceBusClientOptions())
    {
    }

    public ServiceBusClient(string fullyQualifiedNamespace, TokenCredential credential, ServiceBusClientOptions options)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(fullyQualifiedNamespace);
        ArgumentNullException.ThrowIfNull(credential);
        ArgumentNullException.ThrowIfNull(options);
        var host = fullyQualifiedNamespace.Contains("://", StringComparison.Ordinal) ? new Uri(fullyQualifiedNamespace).Host : fullyQualifiedNamespace.TrimEnd('/');
        Scope = new ConnectionScope(new Uri($"sb://{host}/"), new ServiceBusCredential.Entra(credential), options, developmentEmulator: false);
        Identifier = options.Identifier ?? $"{host}-{Guid.NewGuid()}";
        TransportType = options.TransportType;
    }

    public string FullyQualifiedNamespace => Scope.FullyQualifiedNamespace;

    public string Identifier { get; }

    public ServiceBusTransportType TransportType { get; }

    public bool IsClosed { get; private set; }

    internal ConnectionScope Scope { get; }

    private string? ConnectionEntityPath { get; }

    public virtual ServiceBusSender CreateSender(string queueOrTopicName) => Track(new ServiceBusSender(this, Entity(queueOrTopicName)));

    public virtual ServiceBusReceiver CreateReceiver(string queueName) => CreateReceiver(queueName, new ServiceBusReceiverOptions());

    public virtual ServiceBusReceiver CreateReceiver(string queueName, ServiceBusReceiverOptions options) =>
        Track(new ServiceBusReceiver(this, Entity(queueName), options ?? throw new ArgumentNullException(nameof(options))));

    /// <summary>A receiver for a topic's subscription (entity path <c>&lt;topic&gt;/Subscriptions/&lt;subscription&gt;</c>).</summary>
    public virtual ServiceBusReceiver CreateReceiver(string topicName, string subscriptionName) => CreateReceiver(topicName, subscriptionName, new ServiceBusReceiverOptions());

    public virtual ServiceBusReceiver CreateReceiver(string topicName, string subscriptionName, ServiceBusReceiverOptions options) =>
        Track(new ServiceBusReceiver(this, SubscriptionPath(topicName, subscriptionName), options ?? throw new ArgumentNullException(nameof(options))));

    /// <summary>A processor for a topic's subscription.</summary>
    public virtual ServiceBusProcessor CreateProcessor(string topicName, string subscriptionName) => CreateProcessor(topicName, subscriptionName, new ServiceBusProcessorOptions());

    public virtual ServiceBusProcessor CreateProcessor(string topicName, string subscriptionName, ServiceBusProcessorOptions options) =>
        Track(new ServiceBusProcessor(this, SubscriptionPath(topicName, subscriptionName), options ?? throw new ArgumentNullException(nameof(options))));

    public virtual ServiceBusProcessor CreateProcessor(string queueName) => CreateProcessor(queueName, new ServiceBusProcessorOptions());

    public virtual ServiceBusProcessor CreateProcessor(string queueName, ServiceBusProcessorOptions options) =>
        Track(new ServiceBusProcessor(this, Entity(queueName), options ?? throw new ArgumentNullException(nameof(options))));

    public async ValueTask DisposeAsync()
    {
        IAsyncDisposable[] children;
        lock (_sync)
        {
            if (IsClosed)
            {
                return;
            }

            IsClosed = true;
            children = [.. _children];
        }

        foreach (var child in children)
        {
            await child.DisposeAsync().ConfigureAwait(false);
        }

        await Scope.DisposeAsync().ConfigureAwait(false);
        GC.SuppressFinalize(this);
    }

    private string Entity(string name)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ObjectDisposedException.ThrowIf(IsClosed, this);
        if (ConnectionEntityPath is not null && !string.Equals(ConnectionEntityPath, name, StringComparison.OrdinalIgnoreCase))
        {
            throw new ArgumentException($"The connection string names entity '{ConnectionEntityPath}', not '{name}'.", nameof(name));
        }

        return name.Trim('/');
    }

    private string SubscriptionPath(string topicName, string subscriptionName)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(subscriptionName);
        return $"{Entity(topicName)}/Subscriptions/{subscriptionName.Trim('/')}";
    }

    private T Track<T>(T child)
        where T : IAsyncDisposable
    {
        lock (_sync)
        {
            _children.Add(child);
        }

        return child;
    }
}
