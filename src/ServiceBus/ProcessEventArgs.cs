namespace DroneDelivery.ServiceBus;

/// <summary>What a processor's message handler gets (the SDK's shape).</summary>
public class ProcessMessageEventArgs : EventArgs
{
    private readonly ServiceBusReceiver _receiver;

    internal ProcessMessageEventArgs(ServiceBusReceivedMessage message, ServiceBusReceiver receiver, string identifier, CancellationToken cancellationToken)
    {
        Message = message;
        _receiver = receiver;
        Identifier = identifier;
        CancellationToken = cancellationToken;
    }

    public ServiceBusReceivedMessage Message { get; }

    /// <summary>Cancelled when the processor stops or the message's lock is lost during auto-renewal.</summary>
    public CancellationToken CancellationToken { get; }

    public string EntityPath => _receiver.EntityPath;

    public string FullyQualifiedNamespace => _receiver.FullyQualifiedNamespace;

    public string Identifier { get; }

    public virtual Task CompleteMessageAsync(ServiceBusReceivedMessage message, CancellationToken cancellationToken = default) =>
        _receiver.CompleteMessageAsync(message, cancellationToken);

    public virtual Task AbandonMessageAsync(ServiceBusReceivedMessage message, IDictionary<string, object>? propertiesToModify = null, CancellationToken cancellationToken = default) =>
        _receiver.AbandonMessageAsync(message, propertiesToModify, cancellationToken);

    public virtual Task DeadLetterMessageAsync(ServiceBusReceivedMessage message, string deadLetterReason, string? deadLetterErrorDescription = null, CancellationToken cancellationToken = default) =>
        _receiver.DeadLetterMessageAsync(message, deadLetterReason, deadLetterErrorDescription, cancellationToken);

    public virtual Task DeadLetterMessageAsync(ServiceBusReceivedMessage message, IDictionary<string, object>? propertiesToModify = null, CancellationToken cancellationToken = default) =>
        _receiver.DeadLetterMessageAsync(message, propertiesToModify, cancellationToken);

    public virtual Task DeadLetterMessageAsync(ServiceBusReceivedMessage message, IDictionary<string, object>? propertiesToModify, string? deadLetterReason, string? deadLetterErrorDescription = null, CancellationToken cancellationToken = default) =>
        _receiver.DeadLetterMessageAsync(message, propertiesToModify, deadLetterReason, deadLetterErrorDescription, cancellationToken);

    public virtual Task DeferMessageAsync(ServiceBusReceivedMessage message, IDictionary<string, object>? propertiesToModify = null, CancellationToken cancellationToken = default) =>
        _receiver.DeferMessageAsync(message, propertiesToModify, cancellationToken);

    public virtual Task RenewMessageLockAsync(ServiceBusReceivedMessage message, CancellationToken cancellationToken = default) =>
        _receiver.RenewMessageLockAsync(message, cancellationToken);
}

/// <summary>What a processor's error handler gets (the SDK's shape).</summary>
public class ProcessErrorEventArgs(Exception exception, ServiceBusErrorSource errorSource, string fullyQualifiedNamespace, string entityPath, string identifier, CancellationToken cancellationToken)
    : EventArgs
{
    public Exception Exception { get; } = exception;

    public ServiceBusErrorSource ErrorSource { get; } = errorSource;

    public string FullyQualifiedNamespace { get; } = fullyQualifiedNamespace;

    public string EntityPath { get; } = entityPath;

    public string Identifier { get; } = identifier;

    public CancellationToken CancellationToken { get; } = cancellationToken;
}
