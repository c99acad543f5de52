using DroneDelivery.Amqp.Framing;
using DroneDelivery.ServiceBus.Primitives;

namespace DroneDelivery.ServiceBus;

/// <summary>Why a Service Bus operation failed (the SDK's names).</summary>
public enum ServiceBusFailureReason
{
    GeneralError,
    MessagingEntityNotFound,
    MessageLockLost,
    MessageNotFound,
    MessageSizeExceeded,
    MessagingEntityDisabled,
    QuotaExceeded,
    ServiceBusy,
    ServiceTimeout,
    ServiceCommunicationProblem,
    SessionCannotBeLocked,
    SessionLockLost,
    MessagingEntityAlreadyExists,
}

/// <summary>A Service Bus failure with its <see cref="Reason"/> and whether retrying may help.</summary>
public class ServiceBusException : Exception
{
    public ServiceBusException(string message, ServiceBusFailureReason reason, string? entityPath = null, Exception? innerException = null)
        : this(IsTransientReason(reason), message, entityPath, reason, innerException)
    {
    }

    public ServiceBusException(bool isTransient, string message, string? entityPath = null, ServiceBusFailureReason reason = ServiceBusFailureReason.GeneralError, Exception? innerException = null)
        : base(message, innerException)
    {
        IsTransient = isTransient;
        EntityPath = entityPath;
        Reason = reason;
    }

    public ServiceBusFailureReason Reason { get; }

    public bool IsTransient { get; }

    public string? EntityPath { get; }

    public override string Message => EntityPath is null ? base.Message : $"{base.Message} ({EntityPath}).";

    private static bool IsTransientReason(ServiceBusFailureReason reason) =>
        reason is ServiceBusFailureReason.ServiceBusy or ServiceBusFailureReason.ServiceTimeout or ServiceBusFailureReason.ServiceCommunicationProblem;
}

/// <summary>Maps AMQP errors to the exceptions the SDK throws for them.</summary>
internal static class ServiceBusErrors
{
    public static Exception From(Error error, string? entityPath, Exception? inner = null)
    {
        var condition = error.Condition.Value;
        var description = error.Description ?? condition;
        if (condition == ErrorCondition.UnauthorizedAccess.Value)
        {
            return new UnauthorizedAccessException(description, inner);
        }

        var reason = condition switch
        {
            "amqp:not-found" => ServiceBusFailureReason.MessagingEntityNotFound,
            "com.microsoft:message-lock-lost" => ServiceBusFailureReason.MessageLockLost,
            "com.microsoft:session-lock-lost" => ServiceBusFailureReason.SessionLockLost,
            "com.microsoft:message-not-found" => ServiceBusFailureReason.MessageNotFound,
            "amqp:link:message-size-exceeded" => ServiceBusFailureReason.MessageSizeExceeded,
            "com.microsoft:entity-disabled" => ServiceBusFailureReason.MessagingEntityDisabled,
            "amqp:resource-limit-exceeded" => ServiceBusFailureReason.QuotaExceeded,
            "com.microsoft:server-busy" => ServiceBusFailureReason.ServiceBusy,
            "com.microsoft:timeout" => ServiceBusFailureReason.ServiceTimeout,
            "com.microsoft:entity-already-exists" => ServiceBusFailureReason.MessagingEntityAlreadyExists,
            "amqp:connection:forced" or "amqp:link:detach-forced" or "amqp:connection:framing-error" or "amqp:internal-error" => ServiceBusFailureReason.ServiceCommunicationProblem,
            _ => ServiceBusFailureReason.GeneralError,
        };
        return new ServiceBusException(description, reason, entityPath, inner);
    }

    public static Exception From(Exception exception, string? entityPath) => exception switch
    {
        ServiceBusException or UnauthorizedAccessException or ArgumentException or InvalidOperationException and not ObjectDisposedException => exception,
        AmqpException amqp => From(amqp.Error, entityPath, amqp),
        TimeoutException => new ServiceBusException("The operation did not complete in time.", ServiceBusFailureReason.ServiceTimeout, entityPath, exception),
        IOException or System.Net.Sockets.SocketException or ObjectDisposedException =>
            new ServiceBusException("Communication with the Service Bus namespace failed: " + exception.Message, ServiceBusFailureReason.ServiceCommunicationProblem, entityPath, exception),
        _ => exception,
    };

    public static ServiceBusException LockLost(string? entityPath) => new(
        "The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue.",
        ServiceBusFailureReason.MessageLockLost, entityPath);

    public static bool IsLockLost(Exception exception) => exception is ServiceBusException { Reason: ServiceBusFailureReason.MessageLockLost };

    public static Error ManagementError(int status, string? description, string? condition) => new()
    {
        Condition = condition ?? status switch
        {
            410 => ServiceBusAmqpNames.MessageLockLostError.Value,
            404 => ErrorCondition.NotFound.Value,
            408 => ServiceBusAmqpNames.TimeoutError.Value,
            401 => ErrorCondition.UnauthorizedAccess.Value,
            403 => ErrorCondition.ResourceLimitExceeded.Value,
            503 => ServiceBusAmqpNames.ServerBusyError.Value,
            _ => ErrorCondition.InternalError.Value,
        },
        Description = description,
    };
}
