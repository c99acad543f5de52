using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

/// <summary>An AMQP error: a symbolic condition, a description and optional info (spec 2.8.14).</summary>
public sealed class Error : IAmqpEncodable
{
    public required AmqpSymbol Condition { get; init; }

    public string? Description { get; init; }

    public Dictionary<object, object?>? Info { get; init; }

    public void Encode(ByteBuffer buffer)
    {
        var writer = AmqpEncoder.BeginComposite(buffer, Descriptors.Error);
        writer.Symbol(Condition);
        writer.String(Description);
        writer.Value(Info);
        writer.End();
    }

    public static Error? Read(ref AmqpReader r)
    {
        if (r.TryReadNull())
        {
            return null;
        }

        if (r.ReadDescriptorCode() != Descriptors.Error)
        {
            throw new AmqpDecodeException("Expected an error.");
        }

        var count = r.ReadListHeader(out var end);
        var error = new Error
        {
            Condition = (count > 0 ? r.ReadSymbol() : null) ?? throw Performative.Missing("error", "condition"),
            Description = count > 1 ? r.ReadString() : null,
            Info = count > 2 ? r.ReadMap() : null,
        };
        r.SeekTo(end);
        return error;
    }

    public override string ToString() => Description is null ? Condition.Value : $"{Condition.Value}: {Description}";
}

/// <summary>Error conditions defined by AMQP 1.0 (spec 2.8.15-2.8.18).</summary>
public static class ErrorCondition
{
    public static readonly AmqpSymbol InternalError = "amqp:internal-error";
    public static readonly AmqpSymbol NotFound = "amqp:not-found";
    public static readonly AmqpSymbol UnauthorizedAccess = "amqp:unauthorized-access";
    public static readonly AmqpSymbol DecodeError = "amqp:decode-error";
    public static readonly AmqpSymbol ResourceLimitExceeded = "amqp:resource-limit-exceeded";
    public static readonly AmqpSymbol NotAllowed = "amqp:not-allowed";
    public static readonly AmqpSymbol InvalidField = "amqp:invalid-field";
    public static readonly AmqpSymbol NotImplemented = "amqp:not-implemented";
    public static readonly AmqpSymbol ResourceLocked = "amqp:resource-locked";
    public static readonly AmqpSymbol PreconditionFailed = "amqp:precondition-failed";
    public static readonly AmqpSymbol ResourceDeleted = "amqp:resource-deleted";
    public static readonly AmqpSymbol IllegalState = "amqp:illegal-state";
    public static readonly AmqpSymbol FrameSizeTooSmall = "amqp:frame-size-too-small";
    public static readonly AmqpSymbol ConnectionForced = "amqp:connection:forced";
    public static readonly AmqpSymbol FramingError = "amqp:connection:framing-error";
    public static readonly AmqpSymbol Redirect = "amqp:connection:redirect";
    public static readonly AmqpSymbol WindowViolation = "amqp:session:window-violation";
    public static readonly AmqpSymbol ErrantLink = "amqp:session:errant-link";
    public static readonly AmqpSymbol HandleInUse = "amqp:session:handle-in-use";
    public static readonly AmqpSymbol UnattachedHandle = "amqp:session:unattached-handle";
    public static readonly AmqpSymbol DetachForced = "amqp:link:detach-forced";
    public static readonly AmqpSymbol TransferLimitExceeded = "amqp:link:transfer-limit-exceeded";
    public static readonly AmqpSymbol MessageSizeExceeded = "amqp:link:message-size-exceeded";
    public static readonly AmqpSymbol LinkRedirect = "amqp:link:redirect";
    public static readonly AmqpSymbol Stolen = "amqp:link:stolen";
}

/// <summary>An AMQP error raised to the caller: the peer's (or our own) error condition and description.</summary>
public class AmqpException(Error error, Exception? inner = null) : Exception(error.ToString(), inner)
{
    public AmqpException(AmqpSymbol condition, string description)
        : this(new Error { Condition = condition, Description = description })
    {
    }

    public Error Error { get; } = error;

    public AmqpSymbol Condition => Error.Condition;
}

/// <summary>
/// A session error (spec 2.8.17: unattached-handle, handle-in-use, window-violation, errant-link). It ends the
/// session it happened on, with an end carrying it; the connection and its other sessions carry on.
/// </summary>
public sealed class AmqpSessionException(AmqpSymbol condition, string description) : AmqpException(condition, description);
