namespace DroneDelivery.Ingestion;

/// <summary>Names this service's Program for WebApplicationFactory in tests, where six Programs share one test project.</summary>
public sealed class IngestionProgram;
