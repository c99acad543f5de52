namespace DroneDelivery.Contracts;

/// <summary>The HTTP routes of the services, shared by the servers that map them and the clients that call them.</summary>
public static class Routes
{
    public static class Invoices
    {
        public const string Invoice = "/api/invoices/{ownerId}";
    }

    public static class DeliveryRequests
    {
        public const string Collection = "/api/deliveryrequests";
        public const string Item = "/api/deliveryrequests/{id}";
    }

    public static class Deliveries
    {
        public const string Item = "/api/deliveries/{id}";
        public const string Status = "/api/deliveries/{id}/status";
        public const string Events = "/api/deliveries/{id}/events";
        public const string Summary = "/api/deliveries/summary";

        public static string ItemPath(string id) => $"api/deliveries/{Uri.EscapeDataString(id)}";

        /// <summary>The status path Ingestion's <c>Location</c> header points at (absolute path): the gateway's public route.</summary>
        public static string StatusPath(string id) => $"/api/deliveries/{Uri.EscapeDataString(id)}/status";

        /// <summary>Delivery's status of a delivery, relative to Delivery's base address (the edge's backend call).</summary>
        public static string StatusItemPath(string id) => $"api/deliveries/{Uri.EscapeDataString(id)}/status";

        public static string SummaryPath(string ownerId, int year, int month) => WithPeriod("api/deliveries/summary", ownerId, year, month);
    }

    public static class Packages
    {
        public const string Item = "/api/packages/{id}";
        public const string Summary = "/api/packages/summary";

        public static string ItemPath(string id) => $"api/packages/{Uri.EscapeDataString(id)}";

        /// <summary>The package, only if it belongs to <paramref name="deliveryId"/> (for a conditional delete).</summary>
        public static string ItemPath(string id, string deliveryId) => $"api/packages/{Uri.EscapeDataString(id)}?deliveryId={Uri.EscapeDataString(deliveryId)}";

        public static string SummaryPath(string ownerId, int year, int month) => WithPeriod("api/packages/summary", ownerId, year, month);
    }

    public static class DroneDeliveries
    {
        public const string Item = "/api/dronedeliveries/{deliveryId}";
        public const string Utilization = "/api/dronedeliveries/utilization";

        public static string ItemPath(string deliveryId) => $"api/dronedeliveries/{Uri.EscapeDataString(deliveryId)}";

        public static string UtilizationPath(string ownerId, int year, int month) => WithPeriod("api/dronedeliveries/utilization", ownerId, year, month);
    }

    // Relative paths (no leading slash) so they resolve against a backend's BaseAddress, path prefix included.
    private static string WithPeriod(string path, string ownerId, int year, int month) =>
        string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{path}?ownerId={Uri.EscapeDataString(ownerId)}&year={year}&month={month}");
}
