using System.Buffers;
using System.Buffers.Binary;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>SASL: the security layer's header and frames, negotiated as the client or as the listener.</summary>
public sealed partial class AmqpConnection
{
    private async Task<byte[]> ReadExactAsync(int count, CancellationToken cancellationToken)
    {
        while (true)
        {
            var result = await _input.ReadAsync(cancellationToken).ConfigureAwait(false);
            if (result.Buffer.Length >= count)
            {
                var bytes = result.Buffer.Slice(0, count).ToArray();
                _input.AdvanceTo(result.Buffer.GetPosition(count));
                return bytes;
            }

            if (result.IsCompleted)
            {
                throw new IOException("The peer closed the transport during the protocol handshake.");
            }

            _input.AdvanceTo(result.Buffer.Start, result.Buffer.End);
        }
    }

    private async Task ExpectHeaderAsync(byte[] expected, CancellationToken cancellationToken)
    {
        var header = await ReadExactAsync(8, cancellationToken).ConfigureAwait(false);
        if (!header.AsSpan().SequenceEqual(expected))
        {
            throw new AmqpException(ErrorCondition.NotAllowed, $"The peer answered with protocol header {Convert.ToHexString(header)}.");
        }
    }

    private async Task<Performative> ReadSaslFrameAsync(CancellationToken cancellationToken)
    {
        var sizeBytes = await ReadExactAsync(4, cancellationToken).ConfigureAwait(false);
        var size = CheckSaslFrameSize(BinaryPrimitives.ReadUInt32BigEndian(sizeBytes));
        var rest = await ReadExactAsync((int)size - 4, cancellationToken).ConfigureAwait(false);
        return DecodeSaslFrame(rest);
    }

    /// <summary>The size of a SASL frame, checked before its bytes are read: 8 bytes (a header) to 64 KiB.</summary>
    internal static uint CheckSaslFrameSize(uint size) =>
        size is < FrameHeaderSize or > MinMaxFrameSize * 128
            ? throw new AmqpException(ErrorCondition.FramingError, $"SASL frame size {size} is invalid.")
            : size;

    /// <summary>Decodes a SASL frame (spec 5.3.1) from the bytes after its size: data offset, type 1, the performative.</summary>
    internal static Performative DecodeSaslFrame(ReadOnlySpan<byte> rest)
    {
        var doff = rest.Length >= 4 ? rest[0] : throw new AmqpException(ErrorCondition.FramingError, "A SASL frame is shorter than its header.");
        if (rest[1] != 1 || doff < 2 || doff * 4 > rest.Length + 4)
        {
            throw new AmqpException(ErrorCondition.FramingError, "Invalid SASL frame header.");
        }

        var reader = new AmqpReader(rest[(doff * 4 - 4)..]);
        return Performative.Decode(ref reader);
    }

    private async Task WriteSaslFrameAsync(Performative performative, CancellationToken cancellationToken)
    {
        using var buffer = new ByteBuffer(256);
        var start = buffer.Reserve(FrameHeaderSize);
        performative.Encode(buffer);
        var header = buffer.WrittenRange(start, FrameHeaderSize);
        BinaryPrimitives.WriteUInt32BigEndian(header, (uint)buffer.Length);
        header[4] = 2;
        header[5] = 1;
        await _stream.WriteAsync(buffer.WrittenMemory, cancellationToken).ConfigureAwait(false);
    }

    private async Task NegotiateSaslAsClientAsync(SaslProfile profile, CancellationToken cancellationToken)
    {
        await _stream.WriteAsync(SaslHeader, cancellationToken).ConfigureAwait(false);
        await ExpectHeaderAsync(SaslHeader, cancellationToken).ConfigureAwait(false);
        if (await ReadSaslFrameAsync(cancellationToken).ConfigureAwait(false) is not SaslMechanisms mechanisms)
        {
            throw new AmqpException(ErrorCondition.IllegalState, "Expected sasl-mechanisms.");
        }

        if (!mechanisms.Mechanisms.Any(m => m.Value == profile.Mechanism))
        {
            throw new AmqpException(ErrorCondition.NotImplemented,
                $"The server does not offer SASL mechanism {profile.Mechanism} (offers {string.Join(", ", mechanisms.Mechanisms)}).");
        }

        await WriteSaslFrameAsync(new SaslInit { Mechanism = profile.Mechanism, InitialResponse = profile.InitialResponse, HostName = Options.HostName }, cancellationToken).ConfigureAwait(false);
        while (true)
        {
            switch (await ReadSaslFrameAsync(cancellationToken).ConfigureAwait(false))
            {
                case SaslChallenge:
                    await WriteSaslFrameAsync(new SaslResponse { Response = [] }, cancellationToken).ConfigureAwait(false);
                    break;
                case SaslOutcome { Code: SaslCode.Ok }:
                    return;
                case SaslOutcome outcome:
                    throw new AmqpException(ErrorCondition.UnauthorizedAccess, $"SASL authentication failed ({outcome.Code}).");
                default:
                    throw new AmqpException(ErrorCondition.IllegalState, "Unexpected SASL frame.");
            }
        }
    }

    private async Task<bool> NegotiateSaslAsListenerAsync(IReadOnlyList<SaslMechanism> mechanisms, CancellationToken cancellationToken)
    {
        await WriteSaslFrameAsync(new SaslMechanisms { Mechanisms = [.. mechanisms.Select(m => m.Symbol)] }, cancellationToken).ConfigureAwait(false);
        if (await ReadSaslFrameAsync(cancellationToken).ConfigureAwait(false) is not SaslInit init)
        {
            await WriteSaslFrameAsync(new SaslOutcome { Code = SaslCode.Sys }, cancellationToken).ConfigureAwait(false);
            return false;
        }

        var mechanism = mechanisms.FirstOrDefault(m => m.Name == init.Mechanism.Value);
        var ok = mechanism is not null && mechanism.Authenticate(init.InitialResponse);
        await WriteSaslFrameAsync(new SaslOutcome { Code = ok ? SaslCode.Ok : SaslCode.Auth }, cancellationToken).ConfigureAwait(false);
        SaslMechanism = ok ? mechanism!.Name : null;
        return ok;
    }
}
