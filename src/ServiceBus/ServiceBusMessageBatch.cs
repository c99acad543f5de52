using DroneDelivery.Amqp.Codec;
using DroneDelivery.Amqp.Messaging;
using DroneDelivery.ServiceBus.Primitives;
using DroneDelivery.ServiceBus.Transport;

namespace DroneDelivery.ServiceBus;

/// <summary>
/// Messages sent in one transfer (the SDK's batch): a message of format 0x80013700 whose data sections each hold
/// one encoded message. <see cref="TryAddMessage"/> refuses a message that would exceed <see cref="MaxSizeInBytes"/>.
/// </summary>
public sealed class ServiceBusMessageBatch : IDisposable
{
    private readonly List<byte[]> _encoded = [];
    private readonly List<ServiceBusMessage> _messages = [];
    private long _envelopeOverhead;
    private long _sectionsSize;
    private readonly TimeProvider _time;
    private bool _locked;

    internal ServiceBusMessageBatch(long maxSizeInBytes, TimeProvider time)
    {
        MaxSizeInBytes = maxSizeInBytes;
        _time = time;
    }

    public int Count => _messages.Count;

    public long MaxSizeInBytes { get; }

    /// <summary>Encoded size of the batch as it will be transferred.</summary>
    public long SizeInBytes => _messages.Count == 0 ? 0 : _envelopeOverhead + _sectionsSize;

    internal IReadOnlyList<ServiceBusMessage> Messages => _messages;

    internal IReadOnlyList<byte[]> Encoded => _encoded;

    public bool TryAddMessage(ServiceBusMessage message)
    {
        ArgumentNullException.ThrowIfNull(message);
        if (_locked)
        {
            throw new InvalidOperationException("The batch is being sent and cannot change.");
        }

        MessageConverter.AddTraceContext(message, System.Diagnostics.Activity.Current);
        var encoded = MessageConverter.ToAmqp(message, _time).ToArray();
        var overhead = _messages.Count == 0 ? EnvelopeOverhead(message) : _envelopeOverhead;
        var size = overhead + _sectionsSize + DataSectionSize(encoded.Length);
        if (size > MaxSizeInBytes)
        {
            return false;
        }

        _envelopeOverhead = overhead;
        _sectionsSize += DataSectionSize(encoded.Length);
        _encoded.Add(encoded);
        _messages.Add(message);
        return true;
    }

    public void Dispose()
    {
        _encoded.Clear();
        _messages.Clear();
    }

    internal void Lock() => _locked = true;

    internal void Unlock() => _locked = false;

    /// <summary>Builds the batch envelope; one message is sent as itself.</summary>
    internal static (byte[] Payload, uint Format) Envelope(IReadOnlyList<ServiceBusMessage> messages, IReadOnlyList<byte[]> encoded)
    {
        if (encoded.Count == 1)
        {
            return (encoded[0], 0);
        }

        var envelope = EnvelopeFor(messages[0]);
        envelope.Body = new DataBody([.. encoded.Select(e => (ReadOnlyMemory<byte>)e)]);
        return (envelope.ToArray(), ServiceBusAmqpNames.BatchMessageFormat);
    }

    private static AmqpMessage EnvelopeFor(ServiceBusMessage first)
    {
        var envelope = new AmqpMessage { Properties = new MessageProperties { MessageId = first.MessageId, GroupId = first.SessionId } };
        if (first.PartitionKey is not null)
        {
            envelope.EnsureMessageAnnotations()[ServiceBusAmqpNames.PartitionKey] = first.PartitionKey;
        }

        return envelope;
    }

    private static long EnvelopeOverhead(ServiceBusMessage first) => EnvelopeFor(first).ToArray().Length;

    // Descriptor (3 bytes) plus the larger binary constructor (5 bytes) — an upper bound per section.
    private static long DataSectionSize(int length) => 8 + length;
}
