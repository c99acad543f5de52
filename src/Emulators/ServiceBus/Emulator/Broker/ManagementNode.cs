using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.Emulators.Hosting;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>
/// An entity's <c>$management</c> node: renew-lock, peek, update-disposition, receive-by-sequence-number,
/// schedule-message and cancel-scheduled-message, the session operations (renew-session-lock, get- and
/// set-session-state) and the rule operations, answered with <c>statusCode</c> (int), <c>statusDescription</c> and,
/// on errors, <c>errorCondition</c> (symbol). On a session-enabled entity, what a session receiver sends carries the
/// <c>session-id</c>, and what needs the session's lock is refused with 410 session-lock-lost when the requesting
/// connection does not hold it.
/// </summary>
internal sealed class ManagementNode(QueueEntity entity, LatencyModel latency, TimeProvider time, Subscription? subscription = null)
{
    private const string AddRuleOperation = "com.microsoft:add-rule";
    private const string RemoveRuleOperation = "com.microsoft:remove-rule";
    private const string EnumerateRulesOperation = "com.microsoft:enumerate-rules";

    public string Address => entity.Path + ServiceBusAmqpNames.ManagementNodeSuffix;

    public void OnRequest(IncomingDelivery delivery, ConnectionState state)
    {
        if (!delivery.TryTakeRequest(out var request))
        {
            return;
        }

        var operation = request.ApplicationProperties.Text(ServiceBusAmqpNames.ManagementOperationKey);
        var body = (request.Body as ValueBody)?.Value as Dictionary<object, object?> ?? [];
        if (operation == ServiceBusAmqpNames.UpdateDispositionOperation && latency.Complete is var completeLatency && completeLatency > TimeSpan.Zero)
        {
            _ = ModelledDelay.AtLeastAsync(completeLatency, time).ContinueWith(_ => Reply(request, state, Handle(operation, body, state)), TaskScheduler.Default);
            return;
        }

        Reply(request, state, Handle(operation, body, state));
    }

    private void Reply(AmqpMessage request, ConnectionState state, Result result)
    {
        var properties = new Dictionary<string, object?>
        {
            [ServiceBusAmqpNames.ManagementStatusCodeKey] = result.Status,
            [ServiceBusAmqpNames.ManagementStatusDescriptionKey] = result.Description,
        };
        if (result.Condition is { } condition)
        {
            properties[ServiceBusAmqpNames.ManagementErrorConditionKey] = condition;
        }

        state.FindReplyLink(request.Properties?.ReplyTo, Address)?.Send(Responses.For(request, properties, result.Body));
    }

    /// <summary>Runs one operation; a malformed request is answered 400 argument-error, naming what is wrong.</summary>
    internal Result Handle(string? operation, Dictionary<object, object?> body, ConnectionState requester)
    {
        try
        {
            return operation switch
            {
                ServiceBusAmqpNames.RenewLockOperation => RenewLock(body),
                ServiceBusAmqpNames.PeekMessageOperation => Peek(body),
                ServiceBusAmqpNames.UpdateDispositionOperation => UpdateDisposition(body, requester),
                ServiceBusAmqpNames.ReceiveBySequenceNumberOperation => ReceiveBySequenceNumber(body, requester),
                SessionNames.RenewSessionLockOperation or SessionNames.GetSessionStateOperation or SessionNames.SetSessionStateOperation
                    when !entity.RequiresSession => new Result(400, $"The operation '{operation}' applies to a session-enabled queue or subscription only; '{entity.Path}' does not require sessions.", ErrorCondition.NotAllowed),
                SessionNames.RenewSessionLockOperation => RenewSessionLock(body, requester),
                SessionNames.GetSessionStateOperation => GetSessionState(body, requester),
                SessionNames.SetSessionStateOperation => SetSessionState(body, requester),
                ServiceBusAmqpNames.ScheduleMessageOperation => ScheduleMessages(body),
                ServiceBusAmqpNames.CancelScheduledMessageOperation => CancelScheduledMessages(body),
                AddRuleOperation or RemoveRuleOperation or EnumerateRulesOperation when subscription is null =>
                    new Result(400, $"The operation '{operation}' applies to a subscription only.", ErrorCondition.NotAllowed),
                AddRuleOperation => AddRule(subscription!, body),
                RemoveRuleOperation => RemoveRule(subscription!, body),
                EnumerateRulesOperation => EnumerateRules(subscription!, body),
                _ => new Result(501, $"The operation '{operation}' is not supported by the emulator.", ErrorCondition.NotImplemented),
            };
        }
        catch (Exception e) when (e is InvalidCastException or FormatException or ArgumentException or OverflowException or AmqpDecodeException)
        {
            return new Result(400, $"Malformed '{operation}' request: {e.Message}", ServiceBusAmqpNames.ArgumentError);
        }
    }

    private Result RenewLock(Dictionary<object, object?> body)
    {
        if (entity.RequiresSession)
        {
            return new Result(400, "A message in a session is locked by its session: renew the session lock (com.microsoft:renew-session-lock) instead.", ErrorCondition.NotAllowed);
        }

        var tokens = LockTokens(body);
        var expirations = entity.RenewLocks(tokens);
        return expirations is null
            ? LockLost()
            : new Result(200, "OK", null, new Dictionary<object, object?> { [ServiceBusAmqpNames.ExpirationsKey] = expirations });
    }

    private Result Peek(Dictionary<object, object?> body)
    {
        var from = Convert.ToInt64(body.Entry(ServiceBusAmqpNames.FromSequenceNumberKey) ?? 1L, System.Globalization.CultureInfo.InvariantCulture);
        var count = Convert.ToInt32(body.Entry(ServiceBusAmqpNames.MessageCountKey) ?? 1, System.Globalization.CultureInfo.InvariantCulture);
        var messages = entity.Peek(from, count, SessionId(body));
        if (messages.Count == 0)
        {
            return new Result(204, "No messages to peek.", ServiceBusAmqpNames.MessageNotFoundError);
        }

        var list = messages.Select(m => (object?)new Dictionary<object, object?> { [ServiceBusAmqpNames.MessageKey] = m }).ToList();
        return new Result(200, "OK", null, new Dictionary<object, object?> { [ServiceBusAmqpNames.MessagesKey] = list });
    }

    private Result UpdateDisposition(Dictionary<object, object?> body, ConnectionState requester)
    {
        var tokens = LockTokens(body);
        if (entity.RequiresSession && (SessionId(body) is not { } sessionId || !entity.HoldsSession(sessionId, requester)))
        {
            return LockLost();
        }

        var status = body.Entry(ServiceBusAmqpNames.DispositionStatusKey)?.ToString();
        var properties = body.Entry(ServiceBusAmqpNames.PropertiesToModifyKey) as Dictionary<object, object?>;
        foreach (var token in tokens)
        {
            var result = status switch
            {
                ServiceBusAmqpNames.DispositionCompleted => entity.Complete(token),
                ServiceBusAmqpNames.DispositionAbandoned => entity.Abandon(token, properties),
                ServiceBusAmqpNames.DispositionDeferred => entity.Defer(token, properties),
                ServiceBusAmqpNames.DispositionSuspended => entity.DeadLetter(token,
                    body.Entry(ServiceBusAmqpNames.DeadLetterReasonKey)?.ToString(),
                    body.Entry(ServiceBusAmqpNames.DeadLetterDescriptionKey)?.ToString(), properties),
                _ => throw new ArgumentException($"Unknown disposition-status '{status}'."),
            };
            if (result == SettleResult.LockLost)
            {
                return LockLost();
            }
        }

        return new Result(200, "OK", null, new Dictionary<object, object?>());
    }

    private Result ReceiveBySequenceNumber(Dictionary<object, object?> body, ConnectionState requester)
    {
        var sequences = SequenceNumbers(body).Distinct().ToArray(); // a number asked for twice is received once
        var mode = Convert.ToUInt32(body.Entry(ServiceBusAmqpNames.ReceiverSettleModeKey) ?? 1u, System.Globalization.CultureInfo.InvariantCulture);
        var sessionId = SessionId(body);
        if (entity.RequiresSession && (sessionId is null || !entity.HoldsSession(sessionId, requester)))
        {
            return LockLost();
        }

        var received = entity.ReceiveDeferred(sequences, peekLock: mode != 0, sessionId);
        if (received is null)
        {
            return new Result(404, "One or more of the requested messages are not deferred messages of this entity.", ServiceBusAmqpNames.MessageNotFoundError);
        }

        var list = received.Select(r => (object?)new Dictionary<object, object?>
        {
            [ServiceBusAmqpNames.MessageKey] = r.Payload,
            [ServiceBusAmqpNames.LockTokenKey] = r.Token,
        }).ToList();
        return new Result(200, "OK", null, new Dictionary<object, object?> { [ServiceBusAmqpNames.MessagesKey] = list });
    }

    /// <summary>
    /// schedule-message: <c>messages</c> is a list of maps, each with the encoded AMQP message under <c>message</c>
    /// (its <c>x-opt-scheduled-enqueue-time</c> annotation says when), <c>message-id</c> and optionally
    /// <c>session-id</c> and <c>partition-key</c>; the answer carries their <c>sequence-numbers</c>.
    /// </summary>
    private Result ScheduleMessages(Dictionary<object, object?> body)
    {
        if (entity.IsDeadLetterQueue || entity.IsSubscription)
        {
            return NotToDeadLetterQueue();
        }

        if (body.Entry(ServiceBusAmqpNames.MessagesKey) is not List<object?> entries)
        {
            throw new ArgumentException("messages must be a list of maps.");
        }

        var messages = new List<AmqpMessage>(entries.Count);
        foreach (var entry in entries)
        {
            if (entry is not Dictionary<object, object?> map || map.Entry(ServiceBusAmqpNames.MessageKey) is not byte[] encoded)
            {
                throw new ArgumentException("Each entry of messages must be a map with the encoded message as binary under 'message'.");
            }

            if (encoded.Length > entity.Settings.MaxMessageSizeBytes)
            {
                return new Result(413, $"The message of {encoded.Length} bytes exceeds the limit of {entity.Settings.MaxMessageSizeBytes} bytes.", ErrorCondition.MessageSizeExceeded);
            }

            var message = AmqpMessage.Decode(encoded);
            if (message.Properties?.MessageId is null && map.Entry(ServiceBusAmqpNames.MessageIdKey)?.ToString() is { } id)
            {
                message.EnsureProperties().MessageId = id;
            }

            if (message.Properties?.GroupId is null && SessionId(map) is { } session)
            {
                message.EnsureProperties().GroupId = session;
            }

            if (!entity.Accepts(message))
            {
                return new Result(400, QueueEntity.SessionIdMissing, ErrorCondition.NotAllowed);
            }

            messages.Add(message);
        }

        var sequences = entity.Schedule(messages, entity.Settings.UtcNow);
        return new Result(200, "OK", null, new Dictionary<object, object?> { [ServiceBusAmqpNames.SequenceNumbersKey] = sequences });
    }

    /// <summary>
    /// cancel-scheduled-message: <c>sequence-numbers</c> (long[]) of messages still scheduled. A number that is not
    /// (unknown, already enqueued or cancelled) fails the request with message-not-found and cancels nothing.
    /// </summary>
    private Result CancelScheduledMessages(Dictionary<object, object?> body)
    {
        if (entity.IsDeadLetterQueue || entity.IsSubscription)
        {
            return NotToDeadLetterQueue();
        }

        var sequences = SequenceNumbers(body);
        return entity.CancelScheduled(sequences)
            ? new Result(200, "OK", null, new Dictionary<object, object?>())
            : new Result(404, $"Messages not found. Missing sequence numbers among: {string.Join(", ", sequences)}.", ServiceBusAmqpNames.MessageNotFoundError);
    }

    /// <summary>
    /// add-rule: <c>rule-name</c> and <c>rule-description</c>, a map with <c>sql-filter</c> or <c>correlation-filter</c>
    /// (maps) and optionally <c>sql-rule-action</c> (a map with <c>expression</c>), as the SDKs' rule managers send them.
    /// </summary>
    private Result AddRule(Subscription target, Dictionary<object, object?> body)
    {
        var name = body.Entry(RuleCodec.RuleName)?.ToString();
        if (string.IsNullOrWhiteSpace(name) || body.Entry(RuleCodec.RuleDescription) is not Dictionary<object, object?> description)
        {
            throw new ArgumentException("add-rule needs rule-name and a rule-description map.");
        }

        RuleOptions options;
        SubscriptionRule rule;
        try
        {
            options = RuleCodec.Decode(name, description);
            rule = SubscriptionRule.From(options);
        }
        catch (SqlRuleException e)
        {
            return new Result(400, $"The rule '{name}' is not supported at position {e.Position}: {e.Message}.", ServiceBusAmqpNames.ArgumentError);
        }

        return target.TryAdd(rule with { CreatedAt = entity.Settings.UtcNow })
            ? new Result(200, "OK", null, new Dictionary<object, object?>())
            : new Result(409, $"The rule '{name}' already exists on '{entity.Path}'.", ServiceBusAmqpNames.EntityAlreadyExistsError);
    }

    private Result RemoveRule(Subscription target, Dictionary<object, object?> body)
    {
        var name = body.Entry(RuleCodec.RuleName)?.ToString() ?? throw new ArgumentException("remove-rule needs rule-name.");
        return target.TryRemove(name)
            ? new Result(200, "OK", null, new Dictionary<object, object?>())
            : new Result(404, $"The rule '{name}' could not be found on '{entity.Path}'.", ErrorCondition.NotFound);
    }

    /// <summary>enumerate-rules: <c>top</c> and <c>skip</c>; answers <c>rules</c>, a list of maps each with a described <c>rule-description</c>.</summary>
    private Result EnumerateRules(Subscription target, Dictionary<object, object?> body)
    {
        var top = Convert.ToInt32(body.Entry("top") ?? int.MaxValue, System.Globalization.CultureInfo.InvariantCulture);
        var skip = Convert.ToInt32(body.Entry("skip") ?? 0, System.Globalization.CultureInfo.InvariantCulture);
        var rules = target.Rules.Skip(skip).Take(top).Select(r => (object?)new Dictionary<object, object?> { [RuleCodec.RuleDescription] = RuleCodec.Encode(r) }).ToList();
        return rules.Count == 0
            ? new Result(204, "No rules.", null)
            : new Result(200, "OK", null, new Dictionary<object, object?> { ["rules"] = rules });
    }

    /// <summary>renew-session-lock: <c>session-id</c>; answers the new lock expiry as the timestamp <c>expiration</c>.</summary>
    private Result RenewSessionLock(Dictionary<object, object?> body, ConnectionState requester)
    {
        var sessionId = RequiredSessionId(body);
        return entity.RenewSessionLock(sessionId, requester) is { } until
            ? new Result(200, "OK", null, new Dictionary<object, object?> { [SessionNames.ExpirationKey] = until })
            : LockLost();
    }

    /// <summary>get-session-state: <c>session-id</c>; answers <c>session-state</c>, binary, or null when none was set.</summary>
    private Result GetSessionState(Dictionary<object, object?> body, ConnectionState requester)
    {
        var (held, state) = entity.GetSessionState(RequiredSessionId(body), requester);
        return held
            ? new Result(200, "OK", null, new Dictionary<object, object?> { [SessionNames.SessionStateKey] = state })
            : LockLost();
    }

    /// <summary>set-session-state: <c>session-id</c> and <c>session-state</c>, binary, or null to clear it.</summary>
    private Result SetSessionState(Dictionary<object, object?> body, ConnectionState requester)
    {
        var state = body.Entry(SessionNames.SessionStateKey) switch
        {
            null => null,
            byte[] bytes => bytes,
            var other => throw new ArgumentException($"session-state must be binary or null, not {other.GetType().Name}."),
        };
        return entity.SetSessionState(RequiredSessionId(body), state, requester)
            ? new Result(200, "OK", null, new Dictionary<object, object?>())
            : LockLost();
    }

    private static string? SessionId(Dictionary<object, object?> body) => body.Entry(ServiceBusAmqpNames.SessionIdKey) as string;

    private static string RequiredSessionId(Dictionary<object, object?> body) =>
        SessionId(body) ?? throw new ArgumentException("session-id (a string) is required.");

    private static Result NotToDeadLetterQueue() =>
        new(400, "Messages can be scheduled on a queue or a topic only, not on a dead-letter queue or a subscription.", ErrorCondition.NotAllowed);

    private static long[] SequenceNumbers(Dictionary<object, object?> body) => body.Entry(ServiceBusAmqpNames.SequenceNumbersKey) switch
    {
        long[] longs => longs,
        List<object?> values => values.Select(v => Convert.ToInt64(v, System.Globalization.CultureInfo.InvariantCulture)).ToArray(),
        _ => throw new ArgumentException("sequence-numbers must be an array of long."),
    };

    private static Guid[] LockTokens(Dictionary<object, object?> body) => body.Entry(ServiceBusAmqpNames.LockTokensKey) switch
    {
        Guid[] tokens => tokens,
        List<object?> list => [.. list.Select(v => v is Guid g ? g : throw new ArgumentException("lock-tokens must be uuids."))],
        _ => throw new ArgumentException("lock-tokens must be an array of uuid."),
    };

    /// <summary>410 with message-lock-lost, or session-lock-lost on a session-enabled entity.</summary>
    private Result LockLost()
    {
        var error = entity.LockLostError();
        return new Result(410, error.Description!, error.Condition);
    }

    internal sealed record Result(int Status, string Description, AmqpSymbol? Condition, object? Body = null);
}
