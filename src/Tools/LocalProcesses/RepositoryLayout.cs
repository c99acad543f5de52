namespace DroneDelivery.LocalProcesses;

/// <summary>Where things are in a checkout of this repository.</summary>
public static class RepositoryLayout
{
    private const string SolutionFile = "DroneDelivery.sln";

    /// <summary>The directory holding DroneDelivery.sln, searched upwards from this assembly and the working directory.</summary>
    public static string Root { get; } = FindRoot();

    /// <summary>The build configuration this assembly was built with, lower-case as the artifacts layout uses it.</summary>
    public static string Configuration { get; } =
#if DEBUG
        "debug";
#else
        "release";
#endif

    /// <summary>
    /// The built entry assembly of a project under the artifacts layout
    /// (<c>artifacts/bin/&lt;project&gt;/&lt;configuration&gt;/&lt;project&gt;.dll</c>).
    /// </summary>
    public static string ProjectAssembly(string projectName) =>
        Path.Combine(Root, "artifacts", "bin", projectName, Configuration, projectName + ".dll");

    /// <summary>A path relative to the repository root.</summary>
    public static string InRepository(params string[] parts) => Path.Combine([Root, .. parts]);

    private static string FindRoot()
    {
        foreach (var start in new[] { AppContext.BaseDirectory, Directory.GetCurrentDirectory() })
        {
            for (var dir = new DirectoryInfo(start); dir is not null; dir = dir.Parent)
            {
                if (File.Exists(Path.Combine(dir.FullName, SolutionFile)))
                {
                    return dir.FullName;
                }
            }
        }

        throw new InvalidOperationException(
            $"Cannot find {SolutionFile} above '{AppContext.BaseDirectory}' or '{Directory.GetCurrentDirectory()}'. " +
            "Run from inside a checkout of the repository.");
    }
}
