using System.Buffers;

namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>Reading response bodies without keeping them.</summary>
internal static class ResponseBody
{
    private const int BufferSize = 16 * 1024;

    /// <summary>Reads the body to its end into a pooled buffer, so the connection can be reused and the time includes the body.</summary>
    public static async Task DrainAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        var stream = await response.Content.ReadAsStreamAsync(cancellationToken).ConfigureAwait(false);
        await using (stream.ConfigureAwait(false))
        {
            var buffer = ArrayPool<byte>.Shared.Rent(BufferSize);
            try
            {
                while (await stream.ReadAsync(buffer.AsMemory(), cancellationToken).ConfigureAwait(false) > 0)
                {
                }
            }
            finally
            {
                ArrayPool<byte>.Shared.Return(buffer);
            }
        }
    }
}
