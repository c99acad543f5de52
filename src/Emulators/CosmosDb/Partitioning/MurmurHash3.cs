using System.Buffers.Binary;
using System.Numerics;

namespace DroneDelivery.Emulators.CosmosDb.Partitioning;

/// <summary>
/// MurmurHash3 (Austin Appleby, public domain), the two variants Cosmos DB uses for effective
/// partition keys: x64_128 for hash version 2 and x86_32 for hash version 1. Seed 0 in both.
/// </summary>
internal static class MurmurHash3
{
    private const ulong C1 = 0x87c37b91114253d5;
    private const ulong C2 = 0x4cf5ad432745937f;

    public static (ulong H1, ulong H2) Hash128(ReadOnlySpan<byte> data, uint seed = 0)
    {
        ulong h1 = seed;
        ulong h2 = seed;
        var blocks = data.Length / 16;
        for (var i = 0; i < blocks; i++)
        {
            var k1 = BinaryPrimitives.ReadUInt64LittleEndian(data.Slice(i * 16, 8));
            var k2 = BinaryPrimitives.ReadUInt64LittleEndian(data.Slice((i * 16) + 8, 8));

            k1 *= C1;
            k1 = BitOperations.RotateLeft(k1, 31);
            k1 *= C2;
            h1 ^= k1;
            h1 = BitOperations.RotateLeft(h1, 27);
            h1 += h2;
            h1 = (h1 * 5) + 0x52dce729;

            k2 *= C2;
            k2 = BitOperations.RotateLeft(k2, 33);
            k2 *= C1;
            h2 ^= k2;
            h2 = BitOperations.RotateLeft(h2, 31);
            h2 += h1;
            h2 = (h2 * 5) + 0x38495ab5;
        }

        var tail = data[(blocks * 16)..];
        ulong t1 = 0;
        ulong t2 = 0;
        for (var i = tail.Length - 1; i >= 8; i--)
        {
            t2 ^= (ulong)tail[i] << ((i - 8) * 8);
        }

        if (tail.Length > 8)
        {
            t2 *= C2;
            t2 = BitOperations.RotateLeft(t2, 33);
            t2 *= C1;
            h2 ^= t2;
        }

        for (var i = Math.Min(tail.Length, 8) - 1; i >= 0; i--)
        {
            t1 ^= (ulong)tail[i] << (i * 8);
        }

        if (tail.Length > 0)
        {
            t1 *= C1;
            t1 = BitOperations.RotateLeft(t1, 31);
            t1 *= C2;
            h1 ^= t1;
        }

        h1 ^= (ulong)data.Length;
        h2 ^= (ulong)data.Length;
        h1 += h2;
        h2 += h1;
        h1 = FMix64(h1);
        h2 = FMix64(h2);
        h1 += h2;
        h2 += h1;
        return (h1, h2);
    }

    public static uint Hash32(ReadOnlySpan<byte> data, uint seed = 0)
    {
        const uint c1 = 0xcc9e2d51;
        const uint c2 = 0x1b873593;
        var h = seed;
        var blocks = data.Length / 4;
        for (var i = 0; i < blocks; i++)
        {
            var k = BinaryPrimitives.ReadUInt32LittleEndian(data.Slice(i * 4, 4));
            k *= c1;
            k = BitOperations.RotateLeft(k, 15);
            k *= c2;
            h ^= k;
            h = BitOperations.RotateLeft(h, 13);
            h = (h * 5) + 0xe6546b64;
        }

        var tail = data[(blocks * 4)..];
        uint t = 0;
        for (var i = tail.Length - 1; i >= 0; i--)
        {
            t ^= (uint)tail[i] << (i * 8);
        }

        if (tail.Length > 0)
        {
            t *= c1;
            t = BitOperations.RotateLeft(t, 15);
            t *= c2;
            h ^= t;
        }

        h ^= (uint)data.Length;
        h ^= h >> 16;
        h *= 0x85ebca6b;
        h ^= h >> 13;
        h *= 0xc2b2ae35;
        h ^= h >> 16;
        return h;
    }

    private static ulong FMix64(ulong k)
    {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccd;
        k ^= k >> 33;
        k *= 0xc4ceb9fe1a85ec53;
        k ^= k >> 33;
        return k;
    }
}
