package main

import (
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a self-contained kubeconfig (certificates inline,
// so it can be copied) for one client certificate.
func writeKubeconfig(path, server string, caPEM, certPEM, keyPEM []byte, user string) error {
	return clientcmd.WriteToFile(kubeconfigFor(server, caPEM, certPEM, keyPEM, user), path)
}

func kubeconfigFor(server string, caPEM, certPEM, keyPEM []byte, user string) clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["metahook"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["metahook"] = &clientcmdapi.Context{Cluster: "metahook", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "metahook"
	return *cfg
}

// restConfig reads a kubeconfig written by writeKubeconfig.
func restConfig(path string) (*rest.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return clientcmd.BuildConfigFromFlags("", path)
}
