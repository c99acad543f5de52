using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>The capacity model's hooks for data-plane requests: admission (429), charge and latency.</summary>
internal static class DataPlane
{
    /// <summary>A 429 answer when the partition has no RU budget left, otherwise null.</summary>
    public static GatewayResponse? Admit(ContainerResource container, PhysicalPartition partition, string operation)
    {
        if (container.Pool.TryAdmit(partition.Index, out var retryAfter))
        {
            return null;
        }

        var response = GatewayResponse.TooManyRequests(retryAfter).Named(operation);
        response.Container = container;
        response.PartitionCharges.Add((partition, 0));
        response.Latency = container.ThrottledLatency;
        return response;
    }

    /// <summary>Records the charge and the modelled latency of a served request.</summary>
    public static GatewayResponse Charge(this GatewayResponse response, ContainerResource container, PhysicalPartition partition, double charge, int documents)
    {
        charge = Math.Round(charge, 2);
        response.Container = container;
        response.RequestCharge += charge;
        response.DocumentCount += documents;
        response.PartitionCharges.Add((partition, charge));
        response.Latency = container.ServedLatency(1, response.DocumentCount);
        return response;
    }

    /// <summary>Item size in KB for the charge formula, never less than 1.</summary>
    public static double Kilobytes(int bytes) => Math.Max(1, bytes / 1024.0);

}
