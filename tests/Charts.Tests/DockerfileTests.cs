using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// src/Dockerfile builds under BuildKit (kind, docker buildx) and the classic builder (az acr build),
/// so it must not use what only BuildKit understands.
/// </summary>
public sealed class DockerfileTests
{
    private static readonly string[] Instructions = File.ReadAllLines(RepositoryLayout.InRepository("src", "Dockerfile"))
        .Where(line => !line.TrimStart().StartsWith('#'))
        .ToArray();

    [Theory]
    [InlineData("--mount=", "RUN cache/secret mounts")]
    [InlineData("$BUILDPLATFORM", "the automatic BUILDPLATFORM argument")]
    [InlineData("--platform=$", "FROM with an automatic platform argument")]
    [InlineData("<<", "here-documents")]
    [InlineData("--link", "COPY --link")]
    [InlineData("--chmod", "COPY --chmod")]
    public void Uses_no_BuildKit_only_syntax(string syntax, string what)
    {
        var offending = Instructions.Where(line => line.Contains(syntax, StringComparison.Ordinal)).ToList();

        Assert.True(offending.Count == 0, $"src/Dockerfile uses {what}, which the classic builder (az acr build) rejects: {string.Join(" | ", offending)}");
    }

    [Fact]
    public void The_target_architecture_is_optional()
    {
        // BuildKit sets TARGETARCH; the classic builder leaves it empty, and `--arch ""` fails the publish.
        Assert.Contains(Instructions, line => line.Contains("${TARGETARCH:+--arch \"$TARGETARCH\"}", StringComparison.Ordinal));
    }
}
