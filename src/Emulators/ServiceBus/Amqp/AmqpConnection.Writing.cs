using System.Buffers.Binary;
using System.Net.Sockets;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>Writing: frames queued under the lock and the writer loop that sends them.</summary>
public sealed partial class AmqpConnection
{
    /// <summary>Queues one frame for the writer; the caller holds <see cref="Sync"/> or accepts interleaving at frame level.</summary>
    internal void WriteFrame(ushort channel, Performative? performative, ReadOnlySpan<byte> payload = default, byte frameType = 0)
    {
        lock (Sync)
        {
            if (_terminated)
            {
                return;
            }

            var start = _pending.Reserve(FrameHeaderSize);
            try
            {
                performative?.Encode(_pending);
            }
            catch
            {
                // A value that cannot be encoded must not leave half a frame in the outgoing stream.
                _pending.Truncate(start);
                throw;
            }

            _pending.Write(payload);
            var header = _pending.WrittenRange(start, FrameHeaderSize);
            BinaryPrimitives.WriteUInt32BigEndian(header, (uint)(_pending.Length - start));
            header[4] = 2;
            header[5] = frameType;
            BinaryPrimitives.WriteUInt16BigEndian(header[6..], channel);
        }

        _writeSignal.Writer.TryWrite(true);
    }

    /// <summary>Writes a transfer frame whose payload is as much of <paramref name="payload"/> as fits; returns the bytes taken.</summary>
    internal int WriteTransferFrame(ushort channel, Transfer transfer, ReadOnlySpan<byte> payload, Func<Transfer, Transfer> asPartial)
    {
        lock (Sync)
        {
            if (_terminated)
            {
                return payload.Length;
            }

            var start = _pending.Reserve(FrameHeaderSize);
            try
            {
                transfer.Encode(_pending);
            }
            catch
            {
                _pending.Truncate(start);
                throw;
            }

            var room = (int)Math.Min(int.MaxValue, RemoteMaxFrameSize) - (_pending.Length - start);
            if (payload.Length > room)
            {
                _pending.Truncate(start + FrameHeaderSize);
                asPartial(transfer).Encode(_pending);
                room = (int)Math.Min(int.MaxValue, RemoteMaxFrameSize) - (_pending.Length - start);
                if (room <= 0)
                {
                    throw new AmqpException(ErrorCondition.FrameSizeTooSmall, "The peer's max-frame-size cannot hold a transfer.");
                }
            }

            var taken = Math.Min(room, payload.Length);
            _pending.Write(payload[..taken]);
            var header = _pending.WrittenRange(start, FrameHeaderSize);
            BinaryPrimitives.WriteUInt32BigEndian(header, (uint)(_pending.Length - start));
            header[4] = 2;
            header[5] = 0;
            BinaryPrimitives.WriteUInt16BigEndian(header[6..], channel);
            _writeSignal.Writer.TryWrite(true);
            return taken;
        }
    }

    private void StartWriter() => _writerTask = Task.Run(WriteLoopAsync);

    private async Task WriteLoopAsync()
    {
        try
        {
            while (await _writeSignal.Reader.WaitToReadAsync().ConfigureAwait(false))
            {
                _writeSignal.Reader.TryRead(out _);
                await PassGateAsync().ConfigureAwait(false);
                await FlushPendingAsync().ConfigureAwait(false);
            }

            await FlushPendingAsync().ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or SocketException or InvalidOperationException or NotSupportedException)
        {
            Terminate(new Error { Condition = ErrorCondition.ConnectionForced, Description = "The transport failed: " + e.Message });
        }
    }

    /// <summary>Waits while <see cref="AmqpConnectionOptions.Gate"/> holds traffic.</summary>
    private Task PassGateAsync() => Options.Gate?.WaitAsync() ?? Task.CompletedTask;

    private async Task FlushPendingAsync()
    {
        ByteBuffer toWrite;
        lock (Sync)
        {
            if (_pending.Length == 0)
            {
                return;
            }

            (_pending, _writing) = (_writing, _pending);
            toWrite = _writing;
            Volatile.Write(ref _lastSent, Options.TimeProvider.GetTimestamp());
        }

        await _stream.WriteAsync(toWrite.WrittenMemory).ConfigureAwait(false);
        toWrite.Clear();
    }
}
