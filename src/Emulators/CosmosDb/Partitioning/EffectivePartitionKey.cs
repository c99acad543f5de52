using System.Buffers.Binary;
using System.Text;

namespace DroneDelivery.Emulators.CosmosDb.Partitioning;

/// <summary>
/// Computes effective partition keys (EPKs): the hex strings that place a partition key value in the
/// hash space <c>["", "FF")</c>, the same way the SDK does, so that requests the SDK routes by its own
/// hash land on the physical partition that holds the data.
/// </summary>
internal static class EffectivePartitionKey
{
    /// <summary>The inclusive minimum of the EPK space.</summary>
    public const string Minimum = "";

    /// <summary>The exclusive maximum of the EPK space.</summary>
    public const string Maximum = "FF";

    private const int MaxV1StringChars = 100;

    public static string Compute(PartitionKeyComponent component, int hashVersion) =>
        hashVersion == 1 ? ComputeV1(component) : ComputeV2(component);

    /// <summary>
    /// Version 2: MurmurHash3 x64_128 of the component's hashing bytes, written as the 128-bit value
    /// with h2 as the high word, big-endian, with the two top bits cleared.
    /// </summary>
    public static string ComputeV2(PartitionKeyComponent component)
    {
        Span<byte> buffer = stackalloc byte[256];
        var input = HashingBytes(component, buffer, stringTerminator: 0xFF, out var rented);
        var (h1, h2) = MurmurHash3.Hash128(input);
        Span<byte> hash = stackalloc byte[16];
        BinaryPrimitives.WriteUInt64BigEndian(hash, h2);
        BinaryPrimitives.WriteUInt64BigEndian(hash[8..], h1);
        hash[0] &= 0x3F;
        return Convert.ToHexString(hash);
    }

    /// <summary>
    /// Version 1: MurmurHash3 x86_32 of the (truncated) component, then the binary encoding of
    /// <c>[hash, component]</c> as hex.
    /// </summary>
    public static string ComputeV1(PartitionKeyComponent component)
    {
        if (component.Kind == PartitionKeyKind.String && component.Text!.Length > MaxV1StringChars)
        {
            component = component with { Text = component.Text[..MaxV1StringChars] };
        }

        Span<byte> buffer = stackalloc byte[256];
        var input = HashingBytes(component, buffer, stringTerminator: 0x00, out _);
        var hash = (double)MurmurHash3.Hash32(input);
        var output = new List<byte>(32);
        WriteBinaryNumber(output, hash);
        WriteBinary(output, component);
        return Convert.ToHexString(output.ToArray());
    }

    /// <summary>The V1 boundary for a hash value: the binary encoding of the number alone.</summary>
    public static string V1Boundary(double hashValue)
    {
        var output = new List<byte>(12);
        WriteBinaryNumber(output, hashValue);
        return Convert.ToHexString(output.ToArray());
    }

    private static ReadOnlySpan<byte> HashingBytes(PartitionKeyComponent component, Span<byte> buffer, byte stringTerminator, out byte[]? rented)
    {
        rented = null;
        switch (component.Kind)
        {
            case PartitionKeyKind.Number:
                buffer[0] = (byte)PartitionKeyKind.Number;
                BinaryPrimitives.WriteDoubleLittleEndian(buffer[1..], component.Number);
                return buffer[..9];
            case PartitionKeyKind.String:
                var text = component.Text!;
                var length = Encoding.UTF8.GetByteCount(text) + 2;
                var target = length <= buffer.Length ? buffer : (rented = new byte[length]);
                target[0] = (byte)PartitionKeyKind.String;
                Encoding.UTF8.GetBytes(text, target[1..]);
                target[length - 1] = stringTerminator;
                return target[..length];
            default:
                buffer[0] = (byte)component.Kind;
                return buffer[..1];
        }
    }

    private static void WriteBinary(List<byte> output, PartitionKeyComponent component)
    {
        switch (component.Kind)
        {
            case PartitionKeyKind.Number:
                WriteBinaryNumber(output, component.Number);
                break;
            case PartitionKeyKind.String:
                output.Add((byte)PartitionKeyKind.String);
                var utf8 = Encoding.UTF8.GetBytes(component.Text!);
                var shortString = utf8.Length <= MaxV1StringChars;
                var count = shortString ? utf8.Length : MaxV1StringChars + 1;
                for (var i = 0; i < count; i++)
                {
                    output.Add(utf8[i] < 0xFF ? (byte)(utf8[i] + 1) : utf8[i]);
                }

                if (shortString)
                {
                    output.Add(0x00);
                }

                break;
            default:
                output.Add((byte)component.Kind);
                break;
        }
    }

    // Order-preserving variable-length encoding of a double: the first byte holds the top 8 bits,
    // then 7 bits per byte with the low bit set as a continuation flag, cleared on the last byte.
    private static void WriteBinaryNumber(List<byte> output, double value)
    {
        output.Add((byte)PartitionKeyKind.Number);
        var bits = (ulong)BitConverter.DoubleToInt64Bits(value);
        const ulong sign = 0x8000000000000000;
        var payload = bits < sign ? bits ^ sign : (~bits) + 1;
        output.Add((byte)(payload >> 56));
        payload <<= 8;
        byte current = 0;
        var first = true;
        do
        {
            if (!first)
            {
                output.Add(current);
            }

            first = false;
            current = (byte)((payload >> 56) | 0x01);
            payload <<= 7;
        }
        while (payload != 0);

        output.Add((byte)(current & 0xFE));
    }
}
