using System.Buffers.Binary;

namespace DroneDelivery.Emulators.CosmosDb.Protocol;

/// <summary>
/// Resource ids (<c>_rid</c>) in the binary layout the SDK parses: a database is 4 bytes; a
/// collection appends 4 bytes whose first byte has the high bit set; a document or partition key
/// range appends 8 bytes whose last byte's high nibble is the child type (document 0, range 5); an
/// offer is 3 bytes. Encoded as padded base64 with '/' replaced by '-'.
/// </summary>
internal static class ResourceIds
{
    private const byte PartitionKeyRangeType = 5;

    public static string Database(uint ordinal)
    {
        Span<byte> bytes = stackalloc byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, ordinal);
        return Encode(bytes);
    }

    public static string Collection(string databaseRid, uint ordinal)
    {
        Span<byte> bytes = stackalloc byte[8];
        Decode(databaseRid).CopyTo(bytes);
        BinaryPrimitives.WriteUInt32LittleEndian(bytes[4..], ordinal);
        bytes[4] |= 0x80;
        return Encode(bytes);
    }

    /// <summary>A document id: unique per collection; the top nibble (document type 0) stays clear.</summary>
    public static string Document(ReadOnlySpan<byte> collectionRid, ulong ordinal)
    {
        Span<byte> bytes = stackalloc byte[16];
        collectionRid.CopyTo(bytes);
        BinaryPrimitives.WriteUInt64LittleEndian(bytes[8..], ordinal & 0x0FFF_FFFF_FFFF_FFFF);
        return Encode(bytes);
    }

    public static string PartitionKeyRange(string collectionRid, int index)
    {
        Span<byte> bytes = stackalloc byte[16];
        Decode(collectionRid).CopyTo(bytes);
        BinaryPrimitives.WriteUInt64LittleEndian(bytes[8..], (ulong)(index + 1));
        bytes[15] = (byte)((bytes[15] & 0x0F) | (PartitionKeyRangeType << 4));
        return Encode(bytes);
    }

    public static string Offer(uint ordinal)
    {
        Span<byte> bytes = stackalloc byte[3];
        bytes[0] = (byte)ordinal;
        bytes[1] = (byte)(ordinal >> 8);
        bytes[2] = (byte)(ordinal >> 16);
        return Encode(bytes);
    }

    public static byte[] Decode(string rid) => Convert.FromBase64String(rid.Replace('-', '/'));

    private static string Encode(ReadOnlySpan<byte> bytes) => Convert.ToBase64String(bytes).Replace('/', '-');
}
