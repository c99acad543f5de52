using DroneDelivery.ServiceClients.Cosmos;

namespace DroneDelivery.Package;

/// <summary>Package's telemetry: the Cosmos DB metrics of <see cref="CosmosTelemetry"/>, with these logical operations.</summary>
public static class PackageTelemetry
{
    /// <summary>Values of the <c>operation</c> tag.</summary>
    public static class Operations
    {
        public const string PutPackage = "PutPackage";
        public const string GetPackage = "GetPackage";
        public const string DeletePackage = "DeletePackage";
        public const string GetPackageSummary = "GetPackageSummary";
    }
}
