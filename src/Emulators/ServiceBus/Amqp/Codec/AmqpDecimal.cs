using System.Numerics;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

/// <summary>
/// IEEE 754-2008 decimal32/64/128 in the binary integer decimal (BID) layout, mapped to
/// <see cref="decimal"/>. Values outside System.Decimal's range or precision are refused.
/// </summary>
internal static class AmqpDecimal
{
    public static decimal Decode(ReadOnlySpan<byte> bytes)
    {
        var bits = bytes.Length * 8;
        var exponentBits = bits switch { 32 => 8, 64 => 10, 128 => 14, _ => throw new AmqpDecodeException("Bad decimal width.") };
        var bias = bits switch { 32 => 101, 64 => 398, _ => 6176 };
        var raw = new BigInteger(bytes, isUnsigned: true, isBigEndian: true);
        var negative = !(raw >> (bits - 1)).IsZero;
        var top = (int)((raw >> (bits - 3)) & 0x3);
        BigInteger significand;
        int exponent;
        if (top != 0x3)
        {
            exponent = (int)((raw >> (bits - 1 - exponentBits)) & ((BigInteger.One << exponentBits) - 1));
            significand = raw & ((BigInteger.One << (bits - 1 - exponentBits)) - 1);
        }
        else
        {
            if (((raw >> (bits - 5)) & 0x3) == 0x3)
            {
                throw new AmqpDecodeException("Decimal infinities and NaNs have no System.Decimal equivalent.");
            }

            exponent = (int)((raw >> (bits - 3 - exponentBits)) & ((BigInteger.One << exponentBits) - 1));
            var width = bits - 3 - exponentBits;
            significand = (raw & ((BigInteger.One << width) - 1)) | (BigInteger.One << (width + 2));
        }

        exponent -= bias;
        if (exponent > 28 && !significand.IsZero)
        {
            // At least 10^29, beyond System.Decimal's 7.9e28; decided before the exponent's thousands of
            // multiplications by ten, which a peer could otherwise ask for in every element of a large array.
            throw new AmqpDecodeException("Decimal value exceeds System.Decimal's range.");
        }

        if (significand.IsZero && exponent > 0)
        {
            exponent = 0; // zero times any power of ten
        }

        while (exponent > 0)
        {
            significand *= 10;
            exponent--;
        }

        while (exponent < -28 && significand % 10 == 0 && !significand.IsZero)
        {
            significand /= 10;
            exponent++;
        }

        if (exponent < -28)
        {
            if (significand.IsZero)
            {
                return 0m;
            }

            throw new AmqpDecodeException("Decimal value has more precision than System.Decimal.");
        }

        if (significand.GetBitLength() > 96)
        {
            throw new AmqpDecodeException("Decimal value exceeds System.Decimal's range.");
        }

        var magnitude = significand.ToByteArray(isUnsigned: true);
        Span<byte> twelve = stackalloc byte[12];
        magnitude.AsSpan(0, Math.Min(12, magnitude.Length)).CopyTo(twelve);
        var lo = BitConverter.ToInt32(twelve[..4]);
        var mid = BitConverter.ToInt32(twelve.Slice(4, 4));
        var hi = BitConverter.ToInt32(twelve.Slice(8, 4));
        return new decimal(lo, mid, hi, negative, (byte)-exponent);
    }

    /// <summary>Encodes as decimal128: 1 sign bit, 14-bit exponent (bias 6176), 113-bit significand.</summary>
    public static void EncodeDecimal128(decimal value, Span<byte> destination)
    {
        Span<int> parts = stackalloc int[4];
        decimal.GetBits(value, parts);
        var scale = (parts[3] >> 16) & 0xff;
        var negative = parts[3] < 0;
        var significand = new BigInteger((uint)parts[0]) | (new BigInteger((uint)parts[1]) << 32) | (new BigInteger((uint)parts[2]) << 64);
        var raw = significand | (new BigInteger(6176 - scale) << 113);
        if (negative)
        {
            raw |= BigInteger.One << 127;
        }

        destination[..16].Clear();
        var bytes = raw.ToByteArray(isUnsigned: true, isBigEndian: true);
        bytes.CopyTo(destination[(16 - bytes.Length)..16]);
    }
}
