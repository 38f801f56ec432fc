import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.Release;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Runs Helm (through helm-java) on one chart for the chart test, one request per line on stdin:
 * {@code template|notes <TAB> chart-dir <TAB> release <TAB> namespace <TAB> values-file}, or
 * {@code lint <TAB> chart-dir}.
 * Each answer is a header line {@code OK <bytes>} or {@code ERR <bytes>}, then that many bytes of
 * UTF-8: the rendered manifests, the release notes, the lint messages, or Helm's error.
 * One JVM serves the whole test file, so Helm's native library loads once.
 * Usage: java -cp '.helm-java/libs/*' HelmChart.java <kube-version>
 */
public class HelmChart {
  public static void main(String[] args) throws Exception {
    String kubeVersion = args[0];
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    OutputStream out = new BufferedOutputStream(System.out);
    String line;
    while ((line = in.readLine()) != null) {
      String[] f = line.split("\t", -1);
      Path chart = Paths.get(f[1]);
      boolean ok = true;
      String answer;
      try {
        switch (f[0]) {
          case "template":
            answer = new Helm(chart).template().withName(f[2]).withNamespace(f[3])
                .withValuesFile(Paths.get(f[4])).withKubeVersion(kubeVersion).call();
            break;
          case "notes":
            // NOTES.txt is rendered only by install; client-only and dry-run, it touches no cluster.
            Release release = new Helm(chart).install().withName(f[2]).withNamespace(f[3])
                .withValuesFile(Paths.get(f[4])).withKubeVersion(kubeVersion).clientOnly().dryRun().call();
            answer = release.getOutput();
            break;
          case "lint":
            LintResult lint = new Helm(chart).lint().strict().call();
            ok = !lint.isFailed();
            answer = String.join("\n", lint.getMessages());
            break;
          default:
            throw new IllegalArgumentException("unknown request " + f[0]);
        }
      } catch (RuntimeException e) {
        ok = false;
        answer = String.valueOf(e.getMessage());
      }
      byte[] body = answer.getBytes(StandardCharsets.UTF_8);
      out.write(((ok ? "OK " : "ERR ") + body.length + "\n").getBytes(StandardCharsets.UTF_8));
      out.write(body);
      out.flush();
    }
  }
}
