namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>
/// kubeconform -strict against the offline Kubernetes 1.33 schemas, plus this project's minimal
/// schemas for the custom resources (CrdSchemas/): no kind is skipped.
/// </summary>
public static class Kubeconform
{
    public static string CrdSchemas { get; } = Path.Combine(AppContext.BaseDirectory, "CrdSchemas");

    public static ToolResult Validate(string manifests)
    {
        var file = Path.Combine(Path.GetTempPath(), $"dronedelivery-chart-{Guid.NewGuid():N}.yaml");
        File.WriteAllText(file, manifests);
        try
        {
            return ExternalTool.Run(ExternalTool.Kubeconform,
            [
                "-strict",
                "-summary",
                "-schema-location", Path.Combine(ExternalTool.KubernetesSchemas, "{{ .ResourceKind }}{{ .KindSuffix }}.json"),
                "-schema-location", Path.Combine(CrdSchemas, "{{ .Group }}", "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"),
                file,
            ]);
        }
        finally
        {
            File.Delete(file);
        }
    }
}
