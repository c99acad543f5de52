using System.Buffers;
using System.Buffers.Binary;
using System.Net.Sockets;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>Reading: the reader loop, frame decoding and dispatch to the connection and its sessions.</summary>
public sealed partial class AmqpConnection
{
    private void StartReader()
    {
        _ = Task.Run(ReadLoopAsync);
        lock (Sync)
        {
            if (!_terminated)
            {
                var tick = HeartbeatTick();
                _heartbeat = Options.TimeProvider.CreateTimer(static state => ((AmqpConnection)state!).OnHeartbeatTick(), this, tick, tick);
            }
        }
    }

    private async Task ReadLoopAsync()
    {
        Error? error = null;
        try
        {
            while (true)
            {
                var result = await _input.ReadAsync().ConfigureAwait(false);
                var buffer = result.Buffer;
                while (TryReadFrame(ref buffer, out var frame, out var rented))
                {
                    try
                    {
                        Volatile.Write(ref _lastReceived, Options.TimeProvider.GetTimestamp());
                        await PassGateAsync().ConfigureAwait(false);
                        ProcessFrame(frame.Span);
                    }
                    finally
                    {
                        if (rented is not null)
                        {
                            ArrayPool<byte>.Shared.Return(rented);
                        }
                    }
                }

                _input.AdvanceTo(buffer.Start, buffer.End);
                if (result.IsCompleted || _terminated)
                {
                    break;
                }
            }

            if (!_terminated)
            {
                error = new Error { Condition = ErrorCondition.ConnectionForced, Description = "The peer closed the transport without closing the connection." };
            }
        }
        catch (AmqpDecodeException e)
        {
            error = new Error { Condition = ErrorCondition.DecodeError, Description = e.Message };
            Fail(error);
        }
        catch (AmqpException e)
        {
            error = e.Error;
            Fail(error);
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or SocketException or OperationCanceledException)
        {
            error = _terminated ? null : new Error { Condition = ErrorCondition.ConnectionForced, Description = "The transport failed: " + e.Message };
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            // A failure in a handler (or a bug) ends this connection only, never the process or other connections.
            error = new Error { Condition = ErrorCondition.InternalError, Description = $"{e.GetType().Name}: {e.Message}" };
            Fail(error);
        }

        Terminate(error);
        await DisposeTransportAsync().ConfigureAwait(false);
    }

    private bool TryReadFrame(ref ReadOnlySequence<byte> buffer, out ReadOnlyMemory<byte> frame, out byte[]? rented)
    {
        frame = default;
        rented = null;
        if (buffer.Length < 4)
        {
            return false;
        }

        Span<byte> sizeBytes = stackalloc byte[4];
        buffer.Slice(0, 4).CopyTo(sizeBytes);
        var size = BinaryPrimitives.ReadUInt32BigEndian(sizeBytes);
        var limit = Math.Max(MinMaxFrameSize, Options.MaxFrameSize);
        if (size < FrameHeaderSize || size > limit)
        {
            throw new AmqpException(ErrorCondition.FramingError, $"Frame size {size} is outside 8..{limit} bytes.");
        }

        if (buffer.Length < size)
        {
            return false;
        }

        var slice = buffer.Slice(0, size);
        if (slice.IsSingleSegment)
        {
            frame = slice.First;
        }
        else
        {
            rented = ArrayPool<byte>.Shared.Rent((int)size);
            slice.CopyTo(rented);
            frame = rented.AsMemory(0, (int)size);
        }

        buffer = buffer.Slice(size);
        return true;
    }

    /// <summary>
    /// Checks an AMQP frame's header (spec 2.3) and decodes its performative: null for an empty frame (a heartbeat).
    /// Malformed input throws <see cref="AmqpException"/> (framing-error) or <see cref="AmqpDecodeException"/>.
    /// </summary>
    internal static (ushort Channel, Performative? Performative, int PayloadOffset) DecodeFrame(ReadOnlySpan<byte> frame, ushort channelMax)
    {
        if (frame.Length < FrameHeaderSize)
        {
            throw new AmqpException(ErrorCondition.FramingError, $"A frame of {frame.Length} bytes is shorter than its header.");
        }

        var doff = frame[4];
        if (doff < 2 || doff * 4 > frame.Length)
        {
            throw new AmqpException(ErrorCondition.FramingError, $"Invalid data offset {doff}.");
        }

        if (frame[5] != 0)
        {
            throw new AmqpException(ErrorCondition.FramingError, $"Unexpected frame type {frame[5]} after SASL.");
        }

        var channel = BinaryPrimitives.ReadUInt16BigEndian(frame[6..]);
        if (channel > channelMax)
        {
            // Spec 2.7.1: a channel number beyond the channel-max this side announced is a framing error.
            throw new AmqpException(ErrorCondition.FramingError, $"Channel {channel} exceeds the channel-max of {channelMax}.");
        }

        var body = frame[(doff * 4)..];
        if (body.IsEmpty)
        {
            return (channel, null, frame.Length);
        }

        var reader = new AmqpReader(body);
        var performative = Performative.Decode(ref reader);
        return (channel, performative, doff * 4 + reader.Position);
    }

    private void ProcessFrame(ReadOnlySpan<byte> frame)
    {
        var (channel, decoded, payloadOffset) = DecodeFrame(frame, Options.ChannelMax);
        if (decoded is not { } performative)
        {
            Interlocked.Increment(ref _heartbeatsReceived);
            return; // heartbeat
        }

        var payload = frame[payloadOffset..];
        if (RemoteOpen is null && performative is not Open)
        {
            throw new AmqpException(ErrorCondition.IllegalState, $"Expected open, received {performative.GetType().Name.ToLowerInvariant()}.");
        }

        switch (performative)
        {
            case Open open: OnOpen(open); break;
            case Begin begin: OnBegin(channel, begin); break;
            case Close close: OnClose(close); break;
            case SaslMechanisms or SaslInit or SaslChallenge or SaslResponse or SaslOutcome:
                throw new AmqpException(ErrorCondition.FramingError, "SASL performative on an AMQP frame.");
            default:
                AmqpSession? session;
                lock (Sync)
                {
                    _remoteSessions.TryGetValue(channel, out session);
                }

                if (session is null)
                {
                    throw new AmqpException(ErrorCondition.IllegalState, $"Frame on channel {channel}, which has no session.");
                }

                session.OnFrame(performative, payload);
                break;
        }
    }
}
