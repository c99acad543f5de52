
namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>Management reads: peeking and receiving deferred messages by sequence number.</summary>
internal sealed partial class QueueEntity
{
    /// <summary>
    /// Encoded messages from <paramref name="fromSequence"/> on (active, locked, deferred and scheduled), without locking
    /// them; with <paramref name="sessionId"/>, that session's only.
    /// </summary>
    public List<byte[]> Peek(long fromSequence, int count, string? sessionId = null)
    {
        lock (_sync)
        {
            Pump();
            var result = new List<byte[]>();
            if (_sequence.Count == 0 || count <= 0)
            {
                return result;
            }

            foreach (var sequence in _sequence.GetViewBetween(Math.Max(fromSequence, _sequence.Min), long.MaxValue))
            {
                var message = _messages[sequence];
                if (sessionId is not null && !string.Equals(message.SessionId, sessionId, StringComparison.Ordinal))
                {
                    continue;
                }

                result.Add(message.Encode((uint)message.DeliveryCount, message.State == BrokeredMessageState.Locked ? message.LockedUntil : null));
                if (result.Count >= count)
                {
                    break;
                }
            }

            return result;
        }
    }

    /// <summary>
    /// Receives deferred messages by sequence number; null when one of them is not deferred here (or, with
    /// <paramref name="sessionId"/>, not in that session). In a session the messages are locked under its lock.
    /// </summary>
    public List<(byte[] Payload, Guid Token)>? ReceiveDeferred(IReadOnlyList<long> sequenceNumbers, bool peekLock, string? sessionId = null)
    {
        lock (_sync)
        {
            var found = new List<BrokeredMessage>();
            foreach (var sequence in sequenceNumbers)
            {
                if (!_messages.TryGetValue(sequence, out var message) || !message.IsDeferred || message.State != BrokeredMessageState.Deferred ||
                    (RequiresSession && !string.Equals(message.SessionId, sessionId, StringComparison.Ordinal)))
                {
                    return null;
                }

                found.Add(message);
            }

            var result = new List<(byte[], Guid)>();
            var now = _settings.UtcNow;
            foreach (var message in found)
            {
                var prior = (uint)message.DeliveryCount;
                message.DeliveryCount++;
                Metrics.Outgoing();
                if (!peekLock)
                {
                    Remove(message);
                    result.Add((message.Encode(prior, null), Guid.Empty));
                    continue;
                }

                var token = Guid.NewGuid();
                Lock(message, token, now);
                result.Add((message.Encode(prior, message.LockedUntil), token));
            }

            return result;
        }
    }
}
