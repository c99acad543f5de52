namespace DroneDelivery.Contracts;

/// <summary><c>GET /api/invoices/{ownerId}?year=&amp;month=</c> on the gateway.</summary>
public sealed record Invoice(
    string OwnerId,
    int Year,
    int Month,
    InvoiceDeliveries Deliveries,
    InvoicePackages Packages,
    InvoiceUtilization Utilization);

public sealed record InvoiceDeliveries(long Count);

public sealed record InvoicePackages(long Count, double TotalWeight);

public sealed record InvoiceUtilization(double TraveledMiles, double AssignedHours);
