using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The Dockerfiles build under BuildKit (kind, docker buildx) and the classic builder (az acr build),
/// so they must not use what only BuildKit understands: src/Dockerfile (every service, emulator and the
/// load driver) and k8s/observability/aspire-dashboard.Dockerfile (the standalone Aspire dashboard).
/// </summary>
public sealed class DockerfileTests
{
    private static readonly string[] Dockerfiles = ["src/Dockerfile", "k8s/observability/aspire-dashboard.Dockerfile"];

    private static readonly (string Syntax, string What)[] BuildKitOnly =
    [
        ("--mount=", "RUN cache/secret mounts"),
        ("$BUILDPLATFORM", "the automatic BUILDPLATFORM argument"),
        ("--platform=$", "FROM with an automatic platform argument"),
        ("<<", "here-documents"),
        ("--link", "COPY --link"),
        ("--chmod", "COPY --chmod"),
    ];

    public static TheoryData<string, string, string> EveryDockerfileAndSyntax()
    {
        var data = new TheoryData<string, string, string>();
        foreach (var file in Dockerfiles)
        {
            foreach (var (syntax, what) in BuildKitOnly)
            {
                data.Add(file, syntax, what);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(EveryDockerfileAndSyntax))]
    public void Uses_no_BuildKit_only_syntax(string file, string syntax, string what)
    {
        var offending = Instructions(file).Where(line => line.Contains(syntax, StringComparison.Ordinal)).ToList();

        Assert.True(offending.Count == 0, $"{file} uses {what}, which the classic builder (az acr build) rejects: {string.Join(" | ", offending)}");
    }

    [Fact]
    public void The_target_architecture_is_optional()
    {
        // BuildKit sets TARGETARCH; the classic builder leaves it empty, and `--arch ""` fails the publish.
        Assert.Contains(Instructions("src/Dockerfile"), line => line.Contains("${TARGETARCH:+--arch \"$TARGETARCH\"}", StringComparison.Ordinal));
    }

    [Fact]
    public void Every_image_runs_as_the_non_root_user_of_the_chiseled_images()
    {
        foreach (var file in Dockerfiles)
        {
            var instructions = Instructions(file);
            Assert.Contains("USER 1654", instructions);
            Assert.Matches(@"^FROM mcr\.microsoft\.com/dotnet/[a-z-]+:\$\{DOTNET_VERSION\}-noble-chiseled(-extra)? AS runtime$", instructions.Last(l => l.StartsWith("FROM ", StringComparison.Ordinal)));
        }
    }

    private static string[] Instructions(string file) =>
        [.. File.ReadAllLines(RepositoryLayout.InRepository(file.Split('/'))).Where(line => !line.TrimStart().StartsWith('#'))];
}
