namespace DroneDelivery.Emulators.CosmosDb.Storage;

internal sealed partial class PhysicalPartition
{
    /// <summary>
    /// Runs <paramref name="work"/> while holding the partition's lock, so that a transactional batch
    /// reads and writes as one step. The lock is reentrant: <paramref name="work"/> may call
    /// <see cref="Read"/>, <see cref="Write"/> and <see cref="Delete"/>.
    /// </summary>
    public T Exclusive<T>(Func<T> work)
    {
        lock (_sync)
        {
            return work();
        }
    }
}
