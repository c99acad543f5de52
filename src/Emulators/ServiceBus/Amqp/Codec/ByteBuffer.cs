using System.Buffers;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

/// <summary>A growable byte buffer backed by pooled arrays; the unit every encoder writes into.</summary>
public sealed class ByteBuffer : IBufferWriter<byte>, IDisposable
{
    private byte[] _buffer;
    private int _length;

    public ByteBuffer(int initialCapacity = 256)
    {
        _buffer = ArrayPool<byte>.Shared.Rent(Math.Max(16, initialCapacity));
    }

    public int Length => _length;

    public ReadOnlySpan<byte> WrittenSpan => _buffer.AsSpan(0, _length);

    public ReadOnlyMemory<byte> WrittenMemory => _buffer.AsMemory(0, _length);

    /// <summary>Writable view of bytes already written, for back-patching sizes.</summary>
    public Span<byte> WrittenRange(int offset, int length) => _buffer.AsSpan(offset, length);

    public Span<byte> GetSpan(int sizeHint = 0)
    {
        Ensure(Math.Max(sizeHint, 1));
        return _buffer.AsSpan(_length);
    }

    public Memory<byte> GetMemory(int sizeHint = 0)
    {
        Ensure(Math.Max(sizeHint, 1));
        return _buffer.AsMemory(_length);
    }

    public void Advance(int count)
    {
        if (count < 0 || _length + count > _buffer.Length)
        {
            throw new ArgumentOutOfRangeException(nameof(count));
        }

        _length += count;
    }

    public void WriteByte(byte value)
    {
        Ensure(1);
        _buffer[_length++] = value;
    }

    public void Write(ReadOnlySpan<byte> bytes)
    {
        Ensure(bytes.Length);
        bytes.CopyTo(_buffer.AsSpan(_length));
        _length += bytes.Length;
    }

    /// <summary>Reserves <paramref name="count"/> bytes and returns their offset.</summary>
    public int Reserve(int count)
    {
        Ensure(count);
        var offset = _length;
        _length += count;
        return offset;
    }

    public void Truncate(int length)
    {
        if (length < 0 || length > _length)
        {
            throw new ArgumentOutOfRangeException(nameof(length));
        }

        _length = length;
    }

    public void Clear() => _length = 0;

    public byte[] ToArray() => WrittenSpan.ToArray();

    public void Dispose()
    {
        var buffer = _buffer;
        _buffer = [];
        _length = 0;
        if (buffer.Length > 0)
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    private void Ensure(int count)
    {
        if (_buffer.Length - _length >= count)
        {
            return;
        }

        var required = (long)_length + count;
        var size = Math.Max(required, (long)_buffer.Length * 2);
        if (size > Array.MaxLength)
        {
            size = required <= Array.MaxLength ? Array.MaxLength : throw new InvalidOperationException("AMQP buffer exceeds the maximum array size.");
        }

        var next = ArrayPool<byte>.Shared.Rent((int)size);
        _buffer.AsSpan(0, _length).CopyTo(next);
        if (_buffer.Length > 0)
        {
            ArrayPool<byte>.Shared.Return(_buffer);
        }

        _buffer = next;
    }
}
